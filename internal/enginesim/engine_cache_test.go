package enginesim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/kvblock"
)

func TestStopConditions(t *testing.T) {
	const eos = 0
	gen := func(i int) uint32 {
		if i == 2 || i == 5 {
			return eos
		}
		return uint32(10 + i)
	}
	tests := []struct {
		name       string
		req        Request
		wantLen    int
		wantReason string
	}{
		{"eos", Request{MaxTokens: 20}, 3, "stop"},
		{"eos at max is length", Request{MaxTokens: 3}, 3, "length"},
		{"min tokens skips early eos", Request{MaxTokens: 20, MinTokens: 3}, 6, "stop"},
		{"ignore eos", Request{MaxTokens: 9, IgnoreEOS: true}, 9, "length"},
		{"stop token id", Request{MaxTokens: 20, IgnoreEOS: true, StopTokenIDs: []uint32{11}}, 2, "stop"},
		{"stop token id after min tokens", Request{MaxTokens: 20, IgnoreEOS: true, MinTokens: 2, StopTokenIDs: []uint32{11, 13}}, 4, "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := coreMustEngine(t, coreTestConfig(), nil, nil)
			r := tt.req
			r.Prompt, r.Generate, r.EOS = coreTokens(1, 20), gen, eos
			st, err := e.Submit(&r)
			if err != nil {
				t.Fatal(err)
			}
			for coreStep(e) {
			}
			toks, last, closed := coreDrain(st.Out)
			if !closed || len(toks) != tt.wantLen || last.FinishReason != tt.wantReason {
				t.Fatalf("got %d tokens, reason %q (closed %v), want %d, %q", len(toks), last.FinishReason, closed, tt.wantLen, tt.wantReason)
			}
		})
	}
}

// TestMultiTurnReuse checks that generated tokens' blocks are cached, so the
// next turn (prompt + answer + more) hits them.
func TestMultiTurnReuse(t *testing.T) {
	cfg := coreTestConfig()
	e := coreMustEngine(t, cfg, nil, nil)
	seed := kvblock.NewSeed("m", "", "")
	prompt := coreTokens(1, 40)
	st, _ := e.Submit(&Request{Prompt: prompt, Seed: seed, MaxTokens: 30, Generate: coreGen(7), IgnoreEOS: true})
	for coreStep(e) {
	}
	answer, _, _ := coreDrain(st.Out)
	turn2 := append(append(append([]uint32{}, prompt...), answer...), coreTokens(900, 10)...)
	st2, _ := e.Submit(&Request{Prompt: turn2, Seed: seed, MaxTokens: 1, Generate: coreGen(7)})
	for coreStep(e) {
	}
	_, last, _ := coreDrain(st2.Out)
	// 40 + 30 tokens, the last generated token's KV is never computed: 69 tokens → 4 full blocks.
	if want := 4 * cfg.BlockSize; last.CachedTokens != want {
		t.Fatalf("turn 2 CachedTokens = %d, want %d", last.CachedTokens, want)
	}
}

func TestRestartDropsEverything(t *testing.T) {
	sink := &coreRecSink{}
	e := coreMustEngine(t, coreTestConfig(), nil, sink)
	seed := kvblock.NewSeed("m", "", "")
	warm := func() []CachedBlock {
		st, _ := e.Submit(&Request{Prompt: coreTokens(1, 64), Seed: seed, MaxTokens: 1, Generate: coreGen(1)})
		for coreStep(e) {
		}
		coreDrain(st.Out)
		return e.CachedBlocks()
	}
	before := warm()
	running, _ := e.Submit(&Request{Prompt: coreTokens(500, 64), Seed: seed, MaxTokens: 100, Generate: coreGen(1)})
	coreStep(e)
	nEvents := len(sink.events())
	e.Restart()
	_, last, closed := coreDrain(running.Out)
	if !closed || last.FinishReason != "abort" {
		t.Fatalf("running sequence after Restart: closed %v last %+v", closed, last)
	}
	if got := e.CachedBlocks(); len(got) != 0 {
		t.Fatalf("cache after Restart has %d blocks", len(got))
	}
	if got := len(sink.events()); got != nEvents {
		t.Errorf("Restart emitted %d events, want none", got-nEvents)
	}
	after := warm()
	if len(before) != 4 || len(after) != 4 {
		t.Fatalf("cached %d then %d blocks, want 4", len(before), len(after))
	}
	for i := range before {
		if before[i].Hash != after[i].Hash {
			t.Errorf("router hash %d changed across Restart", i)
		}
		if before[i].EngineHash == after[i].EngineHash {
			t.Errorf("engine hash %d unchanged across Restart", i)
		}
		if before[i].Medium != "GPU" {
			t.Errorf("medium %q", before[i].Medium)
		}
	}
}

func TestResetPrefixCache(t *testing.T) {
	sink := &coreRecSink{}
	e := coreMustEngine(t, coreTestConfig(), nil, sink)
	st, _ := e.Submit(&Request{Prompt: coreTokens(1, 64), MaxTokens: 10, Generate: coreGen(1)})
	coreStep(e)
	if e.ResetPrefixCache() {
		t.Fatal("ResetPrefixCache succeeded with blocks in use")
	}
	for coreStep(e) {
	}
	coreDrain(st.Out)
	if !e.ResetPrefixCache() {
		t.Fatal("ResetPrefixCache failed on an idle engine")
	}
	evs := sink.events()
	if got := evs[len(evs)-2:]; !cmp.Equal(got, []string{"C", "E"}) {
		t.Fatalf("last events %q, want AllBlocksCleared then EndStep", got)
	}
	if n := len(e.CachedBlocks()); n != 0 {
		t.Fatalf("%d blocks cached after reset", n)
	}
}
