package hf

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitBehaviors(t *testing.T) {
	// The examples of the Rust library's split pre-tokenizer tests.
	tests := []struct {
		name     string
		behavior splitBehavior
		invert   bool
		pat      pattern
		in       string
		want     []string
	}{
		{"removed", splitRemoved, false, literal(" "), "How are you doing?", []string{"How", "are", "you", "doing?"}},
		{"isolated", splitIsolated, false, literal(" "), "How are you doing?", []string{"How", " ", "are", " ", "you", " ", "doing?"}},
		{"merged_with_previous", splitMergedWithPrevious, false, literal(" "), "How are you doing?", []string{"How ", "are ", "you ", "doing?"}},
		{"merged_with_next", splitMergedWithNext, false, literal(" "), "How are you doing?", []string{"How", " are", " you", " doing?"}},
		{"contiguous", splitContiguous, false, literal("-"), "How are--you doing?", []string{"How are", "--", "you doing?"}},
		{"merged_with_next_runs", splitMergedWithNext, false, literal("▁"), "▁▁a▁b", []string{"▁", "▁a", "▁b"}},
		{"merged_with_previous_leading", splitMergedWithPrevious, false, literal(" "), " a  b", []string{" ", "a ", " ", "b"}},
		{"invert_removed", splitRemoved, true, literal(" "), "a b", []string{" "}},
		{"empty", splitIsolated, false, literal(" "), "", nil},
		{"no_match", splitRemoved, false, literal("x"), "abc", []string{"abc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &splitPre{pat: tt.pat, behavior: tt.behavior, invert: tt.invert}
			got := p.split(tt.in, nil)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("split(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestRegexLookahead(t *testing.T) {
	re, err := compileRegex(`\s+(?!\S)|\s+|\S+`)
	if err != nil {
		t.Fatal(err)
	}
	p := &splitPre{pat: re, behavior: splitIsolated}
	got := p.split("a   b  \n", nil)
	// \s+(?!\S) backs off one character before "b"; the last space then
	// stands alone (\s+), and the trailing run ends the text.
	want := []string{"a", "  ", " ", "b", "  \n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestMatcherLeftmostLongest(t *testing.T) {
	m := newMatcher(map[string]uint32{"<a>": 1, "<a><b>": 2, "b>": 3, "<": 4}, nil)
	got := m.split("x<a><b>y<a>b><", nil)
	want := []piece{
		{text: "x"}, {text: "<a><b>", id: 2, isToken: true}, {text: "y"},
		{text: "<a>", id: 1, isToken: true}, {text: "b>", id: 3, isToken: true}, {text: "<", id: 4, isToken: true},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(piece{})); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	var none *matcher
	if diff := cmp.Diff([]piece{{text: "abc"}}, none.split("abc", nil), cmp.AllowUnexported(piece{})); diff != "" {
		t.Errorf("nil matcher mismatch (-want +got):\n%s", diff)
	}
}

func TestLossyUTF8(t *testing.T) {
	tests := []struct {
		in   []byte
		want string
	}{
		{[]byte("héllo"), "héllo"},
		{[]byte{0xE2, 0x82}, "\uFFFD"},                   // truncated 3-byte sequence: one replacement
		{[]byte{0xE2, 0x82, 'a'}, "\uFFFDa"},             //
		{[]byte{0xFF, 0xFE}, "\uFFFD\uFFFD"},             // invalid bytes: one each
		{[]byte{0xED, 0xA0, 0x80}, "\uFFFD\uFFFD\uFFFD"}, // surrogate: ED then 2 stray
		{[]byte{0xF0, 0x9F, 0x98}, "\uFFFD"},
		{[]byte{0xF0, 0x9F, 0x98, 0x80}, "😀"},
		{[]byte{0xC0, 0x80}, "\uFFFD\uFFFD"},
	}
	for _, tt := range tests {
		if got := lossyUTF8(tt.in); got != tt.want {
			t.Errorf("lossyUTF8(% x) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDecoders(t *testing.T) {
	tests := []struct {
		name string
		dec  decoder
		in   []string
		want string
	}{
		{"byte_fallback", decSequence{byteFallbackDec{}, fuseDec{}}, []string{"a", "<0xE2>", "<0x82>", "<0xAC>", "b"}, "a€b"},
		{"byte_fallback_invalid", decSequence{byteFallbackDec{}, fuseDec{}}, []string{"<0xE2>", "<0x82>", "x"}, "\uFFFD\uFFFDx"},
		{"strip", decSequence{fuseDec{}, stripDec{content: ' ', start: 1}}, []string{"  a", " b "}, " a b "},
		{"strip_all", stripDec{content: ' ', start: 3, stop: 3}, []string{"   "}, ""},
		{"metaspace", metaspaceDec{replacement: '▁', prepend: true}, []string{"▁Hey", "▁you"}, "Hey you"},
		{"byte_level", byteLevelDec{}, []string{"Ġhello", "Ċ", "<|x|>"}, " hello\n<|x|>"},
		{"byte_level_non_table", byteLevelDec{}, []string{"Ġ", "日本"}, " 日本"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(tt.dec.decodeChain(append([]string(nil), tt.in...)), "")
			if got != tt.want {
				t.Errorf("decode(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestByteLevelRoundTrip(t *testing.T) {
	var all []byte
	for b := 0; b < 256; b++ {
		all = append(all, byte(b))
	}
	enc := byteLevelEncode(string(all))
	if got := byteLevelDecode(enc, nil); string(got) != string(all) {
		t.Errorf("round trip of all bytes failed: %q", got)
	}
	if got := byteLevelEncode(" \n"); got != "ĠĊ" {
		t.Errorf("byteLevelEncode(\" \\n\") = %q, want \"ĠĊ\"", got)
	}
}

func TestRefRune(t *testing.T) {
	tests := []struct {
		in, want rune
	}{
		{'a', 'a'}, {0x0378, standIn}, {'日', '日'}, {0xFBCB, standIn}, {0x10FFFF, standIn}, {0x1F600, 0x1F600},
	}
	for _, tt := range tests {
		if got := refRune(tt.in); got != tt.want {
			t.Errorf("refRune(%U) = %U, want %U", tt.in, got, tt.want)
		}
	}
}

func TestExpandCaseInsensitive(t *testing.T) {
	tests := []struct{ in, want string }{
		{`(?i:'s|'t)|x`, "(?:'[sS\u017F]|'[tT])|x"},
		{`a(?i:'ll|'d)?b`, `a(?:'[lL][lL]|'[dD])?b`},
		{`(?i:\p{L})`, `(?i:\p{L})`}, // not a simple group: left alone
		{`no group`, `no group`},
	}
	for _, tt := range tests {
		if got := expandCaseInsensitive(tt.in); got != tt.want {
			t.Errorf("expandCaseInsensitive(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
