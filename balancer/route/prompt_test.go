package route

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// fakePrompt is a PreparedPrompt: the hashes themselves.
type fakePrompt []kvblock.Hash

func (p fakePrompt) Len() int { return len(p) }

// otherPrompt is a preparation promptIndex does not understand.
type otherPrompt int

func (p otherPrompt) Len() int { return int(p) }

// promptIndex is a PromptIndex over a fakeIndex that records which path
// answered. It is used from one goroutine.
type promptIndex struct {
	set               fakeIndex
	lie               int // added to LongestPrefixOf's answer, to tell the paths apart
	viaPrompt, viaRaw int
}

func (p *promptIndex) LongestPrefix(hashes []kvblock.Hash) int {
	p.viaRaw++
	return p.set.LongestPrefix(hashes)
}

func (p *promptIndex) LongestPrefixOf(pp PreparedPrompt) (int, bool) {
	fp, ok := pp.(fakePrompt)
	if !ok {
		return 0, false
	}
	p.viaPrompt++
	return p.set.LongestPrefix(fp) + p.lie, true
}

var _ PromptIndex = (*promptIndex)(nil)

// A prepared prompt is used when its length matches and the index
// understands it; otherwise the index is asked with the hashes. Either way
// the answer is capped below the prompt's last token.
func TestPredictUsesPreparedPrompt(t *testing.T) {
	hs := prompt(1, 1, 10, 10) // 10 blocks, 160 tokens: at most 9 cacheable
	tests := []struct {
		name         string
		prep         PreparedPrompt
		held, lie    int
		wantCached   int32
		wantPrompt   int
		wantRawCalls int
	}{
		{name: "no prompt", held: 4, lie: 1, wantCached: 4 * 16, wantRawCalls: 1},
		{name: "prepared", prep: fakePrompt(hs), held: 4, lie: 1, wantCached: 5 * 16, wantPrompt: 1},
		{name: "prepared, capped at the last token", prep: fakePrompt(hs), held: 10, wantCached: 9 * 16, wantPrompt: 1},
		{name: "length mismatch ignored", prep: fakePrompt(hs[:3]), held: 4, lie: 1, wantCached: 4 * 16, wantRawCalls: 1},
		{name: "declined", prep: otherPrompt(len(hs)), held: 4, lie: 1, wantCached: 4 * 16, wantRawCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{PolicyKVAware, PolicyCostModel} {
				cs := cands(2)
				idx := &promptIndex{set: fakeIndex{}.add(hs[:tc.held]), lie: tc.lie}
				cs[0].Prefix = idx
				r := req(hs)
				r.Prompt = tc.prep
				_, d := mustPick(t, newPolicy(t, name, func(c *Config) { c.Overlay.TTL = 0 }), r, cs)
				if d.Cached[0] != tc.wantCached {
					t.Errorf("%s: Cached[0] = %d, want %d", name, d.Cached[0], tc.wantCached)
				}
				got := [2]int{idx.viaPrompt, idx.viaRaw}
				if diff := cmp.Diff([2]int{tc.wantPrompt, tc.wantRawCalls}, got); diff != "" {
					t.Errorf("%s: calls [prompt raw] mismatch (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

// Only the policies that read summaries get a prepared prompt, and only
// for a request with hashes.
func TestPreparePrompt(t *testing.T) {
	want := map[string]bool{PolicyKVAware: true, PolicyCostModel: true, PolicyDynamoKV: true, PolicyLLMD: true}
	hashes := []kvblock.Hash{1, 2, 3}
	for _, name := range allPolicies() {
		p := newPolicy(t, name, nil)
		var pp countingPreparer
		got := PreparePrompt(p, hashes, &pp)
		if (got != nil) != want[name] || pp.n != map[bool]int{true: 1}[want[name]] {
			t.Errorf("PreparePrompt(%s) = %v after %d preparations, want prepared %v once", name, got, pp.n, want[name])
		}
		if got := PreparePrompt(p, nil, &pp); got != nil {
			t.Errorf("PreparePrompt(%s, no hashes) = %v, want nil", name, got)
		}
	}
}

// countingPreparer counts its preparations.
type countingPreparer struct{ n int }

func (c *countingPreparer) Prepare(h []kvblock.Hash) PreparedPrompt {
	c.n++
	return preparedLen(len(h))
}

type preparedLen int

func (p preparedLen) Len() int { return int(p) }
