package hf

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scannerPairs returns each hand-written scanner with the regex it replaces.
func scannerPairs(t testing.TB) map[string][2]pattern {
	t.Helper()
	out := map[string][2]pattern{}
	for src, k := range gpt4Patterns {
		re, err := compileRegex(src)
		if err != nil {
			t.Fatal(err)
		}
		name := "gpt4_digits" + string(rune('0'+k))
		out[name] = [2]pattern{gpt4Scanner{maxDigits: k}, re}
	}
	gpt2, err := compileRegex(gpt2Pattern)
	if err != nil {
		t.Fatal(err)
	}
	out["gpt2"] = [2]pattern{gpt2Scanner{}, gpt2}
	for src, sc := range knownScanners {
		re, err := compileRegex(src)
		if err != nil {
			t.Fatal(err)
		}
		out[src[:min(len(src), 24)]] = [2]pattern{sc, re}
	}
	return out
}

// scannerText returns seeded text rich in the characters the split regexes
// care about: letters of all cases and scripts, digits of several kinds,
// every kind of white space, apostrophes and contractions, marks, symbols
// and code points unassigned in the reference tables.
func scannerText(rnd *rand.Rand) string {
	pieces := []string{"'", "'s", "'S", "'ll", "'LL", "'Re", "'ve", "'m", "'d", "'t", "'ſ", "'x", "''",
		" ", "  ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\u0085", "\u00a0", "\u2003", "\u3000", "\u2028",
		"a", "Z", "é", "ß", "日", "Ж", "ǅ", "ʰ", "1", "٣", "Ⅻ", "½", "²", "\u0301", "\u0903", "!", "...", "—",
		"😀", "€", "\u200b", "\ufeff", "\x00", "\x7f", "\uFBCB", "\U000e0001", "\U0010FFFD", "_", "-", "/", "ﬅ",
		"A", "Bc", "DE", "ǈ", "ʰ", "ª", "中", "\u0300", "\u20dd", "x\u0301", "\u0301A", "AB\u0301", "Aʰ", "ʰA", "ǅa", "İ",
		"#abc", ".X", "$", "+", "©", "ひらがな", "カタ", "龥", "龦", "1234567", "(a)", "\u0301\u0301", " (", " +\n"}
	var b strings.Builder
	for range rnd.IntN(30) {
		b.WriteString(pieces[rnd.IntN(len(pieces))])
	}
	return b.String()
}

func TestScannerMatchesRegex(t *testing.T) {
	for name, pair := range scannerPairs(t) {
		t.Run(name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(42, 43))
			for range 20000 {
				s := scannerText(rnd)
				want := pair[1].findAll(s, nil)
				got := pair[0].findAll(s, nil)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("findAll(%q) mismatch (-regexp2 +scanner):\n%s", s, diff)
				}
			}
		})
	}
}

func TestScannerChosen(t *testing.T) {
	for _, fam := range []string{"llama3_1", "qwen3", "gptoss", "deepseek_v3"} {
		tk := loadFamily(t, fam)
		seq, ok := tk.pre.(preSequence)
		if !ok {
			t.Fatalf("%s: pre-tokenizer %T, want a Sequence", fam, tk.pre)
		}
		for i, p := range seq {
			if sp, ok := p.(*splitPre); ok {
				if _, isRegex := sp.pat.(*regex); isRegex {
					t.Errorf("%s: split %d is a regex, want a scanner", fam, i)
				}
			}
		}
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range []string{"", "I'll  go\n\n 123456 x", "'ſa", " \t\r\n  x", "a\u0301b ½½½½"} {
		f.Add(s)
	}
	pairs := scannerPairs(f)
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		for name, pair := range pairs {
			want := pair[1].findAll(s, nil)
			got := pair[0].findAll(s, nil)
			if !cmp.Equal(want, got) {
				t.Fatalf("%s: findAll(%q) = %v, regexp2 %v", name, s, got, want)
			}
		}
	})
}
