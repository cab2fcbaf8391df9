package enginesim

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

func TestNaturalLengthRange(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[int]bool{}
	for i := 0; i < 10000; i++ {
		n := naturalLength(r.Uint64())
		if n < minNaturalTokens || n > maxNaturalTokens {
			t.Fatalf("naturalLength = %d, outside [%d, %d]", n, minNaturalTokens, maxNaturalTokens)
		}
		seen[n] = true
	}
	if len(seen) < 300 {
		t.Errorf("only %d distinct lengths: not spread over the range", len(seen))
	}
}

func TestTokenGenerator(t *testing.T) {
	vocab := simtok.Vocabulary
	gen := tokenGenerator(42, 20, false, vocab, simtok.EOSID)
	for i := 0; i < 20; i++ {
		if tok := gen(i); tok == simtok.EOSID || !containsID(vocab, tok) {
			t.Fatalf("token %d = %d, want a vocabulary token", i, tok)
		}
	}
	if gen(20) != simtok.EOSID || gen(25) != simtok.EOSID {
		t.Error("no EOS at and after the natural length")
	}
	noEOS := tokenGenerator(42, 20, true, vocab, simtok.EOSID)
	for i := 0; i < 100; i++ {
		if noEOS(i) == simtok.EOSID {
			t.Fatal("EOS generated with ignore_eos")
		}
		if i < 20 && noEOS(i) != gen(i) {
			t.Fatal("ignore_eos changed the tokens before the natural end")
		}
	}
	if generationKey("id", []uint32{1}) != generationKey("id", []uint32{2}) {
		t.Error("a client id must fix the output whatever the prompt")
	}
	if generationKey("", []uint32{1}) == generationKey("", []uint32{2}) {
		t.Error("different prompts share a key")
	}
}

// TestTextStreamSplitInvariant is a property test: whatever the stop
// strings and however the tokens are grouped into engine outputs, the
// streamed deltas add up to the same text, stop and token count as one push
// of every token, and the text never contains a stop string (unless kept).
func TestTextStreamSplitInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	tok := simTokenizer{}
	for iter := 0; iter < 3000; iter++ {
		n := 1 + r.IntN(60)
		gen := tokenGenerator(r.Uint64(), n, r.IntN(2) == 0, simtok.Vocabulary, simtok.EOSID)
		toks := make([]uint32, n+1)
		for i := range toks {
			toks[i] = gen(i)
		}
		full, _ := simtok.Decode(toks, true)
		p := &openai.Params{SkipSpecialTokens: true, IncludeStopStrInOutput: r.IntN(4) == 0, MinTokens: r.IntN(4)}
		for k := r.IntN(3); k > 0; k-- {
			if len(full) > 2 {
				i := r.IntN(len(full) - 1)
				p.Stop = append(p.Stop, full[i:min(len(full), i+1+r.IntN(6))])
			}
		}
		if r.IntN(4) == 0 {
			p.StopTokenIDs = []uint32{toks[r.IntN(len(toks))]}
		}
		whole := newTextStream(tok, p)
		wantText := whole.push(toks) + whole.flush()

		split := newTextStream(tok, p)
		var got strings.Builder
		rest := toks
		for len(rest) > 0 && !split.stopped {
			k := 1 + r.IntN(min(4, len(rest)))
			got.WriteString(split.push(rest[:k]))
			rest = rest[k:]
		}
		got.WriteString(split.flush())
		if got.String() != wantText || split.reason != whole.reason || len(split.tokens) != len(whole.tokens) {
			t.Fatalf("iteration %d: split gives %q/%+v/%d tokens, whole %q/%+v/%d (stops %q, ids %v)",
				iter, got.String(), split.reason, len(split.tokens), wantText, whole.reason, len(whole.tokens), p.Stop, p.StopTokenIDs)
		}
		if !p.IncludeStopStrInOutput && p.MinTokens == 0 && whole.reason.IsStr && strings.Contains(wantText, whole.reason.Str) {
			t.Fatalf("iteration %d: text %q still contains stop %q", iter, wantText, whole.reason.Str)
		}
	}
}

func TestTextStreamHoldsBackPossibleStop(t *testing.T) {
	tok := simTokenizer{}
	p := &openai.Params{SkipSpecialTokens: true, Stop: []string{"is it "}}
	ts := newTextStream(tok, p)
	// Like vLLM, the last len(stop)-1 bytes are held back.
	if got := ts.push(simtok.Encode("go is ", false)); got != "g" {
		t.Errorf("push = %q, want %q (the rest held back)", got, "g")
	}
	if got := ts.push(simtok.Encode("it ", false)); got != "o " || !ts.stopped || ts.reason.Str != "is it " {
		t.Errorf("push = %q stopped=%v reason=%+v", got, ts.stopped, ts.reason)
	}
}
