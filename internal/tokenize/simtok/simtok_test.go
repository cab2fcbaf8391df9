package simtok

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRoundTrip(t *testing.T) {
	for _, s := range []string{"", "hello world", "héllo wörld 日本語 😀 ok", "<|start|>user\nhi<|end|>\n", "<|nope|> a<b", "\x00\xff"} {
		ids := Encode(s, false)
		got, err := Decode(ids, false)
		if err != nil || got != s {
			t.Errorf("Decode(Encode(%q)) = %q, %v", s, got, err)
		}
	}
}

func TestSharedPrefixSharesTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	letters := "ab cd\n日😀<|end|>"
	for range 2000 {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(string([]rune(letters)[r.IntN(utf8.RuneCountInString(letters))]))
		}
		s := b.String()
		ext := s + " more text " + s
		a, full := Encode(s, false), Encode(ext, false)
		// Every token of s except possibly the last is a token of ext.
		if len(a) > 0 && !slices.Equal(a[:len(a)-1], full[:len(a)-1]) {
			t.Fatalf("prefix tokens differ for %q", s)
		}
	}
}

func TestGeneratedTextRetokenizes(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	prompt := RenderChat([]Message{{"user", "hi there"}}, true, false)
	ids := Encode(prompt, false)
	for range 500 {
		gen := make([]uint32, r.IntN(40))
		for i := range gen {
			gen[i] = Vocabulary[r.IntN(len(Vocabulary))]
		}
		text, err := Decode(gen, true)
		if err != nil {
			t.Fatal(err)
		}
		// The next turn contains the generated text as the assistant message.
		next := Encode(RenderChat([]Message{{"user", "hi there"}, {"assistant", text}}, false, false), false)
		want := append(append(slices.Clone(ids), gen...), EndID, Encode("\n", false)[0])
		if !slices.Equal(next, want) {
			t.Fatalf("generated %q does not retokenize", text)
		}
	}
}

func FuzzEncodeDecode(f *testing.F) {
	f.Add("hello <|start|> world")
	f.Fuzz(func(t *testing.T, s string) {
		ids := Encode(s, true)
		got, err := Decode(ids[1:], false)
		if err != nil || got != s {
			t.Fatalf("round trip %q -> %q (%v)", s, got, err)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 700)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Encode(text, false)
	}
}
