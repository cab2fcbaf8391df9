package route

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLLMDScores(t *testing.T) {
	// A 128-block prompt; replica 2 holds 96 blocks (prefix score 0.75).
	// Defaults: 3 × prefix + 2 × queue + 2 × (1 - KV usage).
	hs := prompt(6, 6, 96, 128)
	for _, tc := range []struct {
		name   string
		edit   func(cs []Candidate)
		cfg    func(*LLMDConfig)
		want   int
		scores []float64
	}{
		{name: "the warm replica wins at equal load", want: 2, scores: []float64{4, 4, 6.25, 4}},
		{name: "queues are normalised over the eligible: min 1, max 0",
			edit: func(cs []Candidate) {
				cs[0].Load.Waiting, cs[1].Load.Waiting, cs[2].Load.Waiting, cs[3].Load.Waiting = 4, 0, 8, 2
			}, want: 2, scores: []float64{3, 4, 4.25, 3.5}},
		{name: "a full KV cache on the warm replica tips it",
			edit: func(cs []Candidate) {
				cs[0].Load.Waiting, cs[1].Load.Waiting, cs[2].Load.Waiting, cs[3].Load.Waiting = 4, 0, 8, 2
				cs[2].Load.KVUsage = 0.2
			}, want: 1, scores: []float64{3, 4, 3.85, 3.5}},
		{name: "a stale report: own pending requests as the queue, usage 0",
			edit: func(cs []Candidate) {
				for i := range cs {
					cs[i].Load.Stale, cs[i].Load.KVUsage, cs[i].Load.Waiting = true, 0.9, 100
				}
				cs[2].Own.InFlight.Store(3)
				cs[2].Own.Pending.Store(3)
			}, want: 2, scores: []float64{4, 4, 4.25, 4}},
		{name: "weights scale each scorer",
			cfg: func(c *LLMDConfig) {
				*c = LLMDConfig{PrefixCacheWeight: 1, QueueWeight: 4, KVCacheUtilizationWeight: 0}
			},
			edit: func(cs []Candidate) {
				cs[0].Load.Waiting, cs[2].Load.Waiting = 1, 2
			}, want: 1, scores: []float64{2, 4, 0.75, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, PolicyLLMD, func(c *Config) {
				if tc.cfg != nil {
					tc.cfg(&c.Baselines.LLMD)
				}
			})
			cs := cands(4)
			cs[2].Prefix = fakeIndex{}.add(hs[:96])
			if tc.edit != nil {
				tc.edit(cs)
			}
			got, d := mustPick(t, p, req(hs), cs)
			if tc.want >= 0 && got != tc.want && !(tc.want == 1 && got == 3 && d.Scores[3] == d.Scores[1]) {
				t.Errorf("pick %d, want %d; scores %v", got, tc.want, d.Scores)
			}
			if diff := cmp.Diff(tc.scores, d.Scores, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
			if d.Score != d.Scores[got] || d.Reason != ReasonLLMDMaxScore {
				t.Errorf("Score %v Reason %s, want the pick's score and %s", d.Score, d.Reason, ReasonLLMDMaxScore)
			}
		})
	}
}

// The max-score picker breaks ties at random, reproducibly by seed.
func TestLLMDTies(t *testing.T) {
	hs := prompt(9, 9, 0, 32)
	picks := func(seed uint64) []int {
		p := newPolicy(t, PolicyLLMD, func(c *Config) { c.Seed, c.Overlay.TTL = seed, 0 })
		cs := cands(4)
		out := make([]int, 400)
		for k := range out {
			out[k], _ = mustPick(t, p, req(hs), cs)
		}
		return out
	}
	a := picks(11)
	count := map[int]int{}
	for _, i := range a {
		count[i]++
	}
	for i := range 4 {
		if count[i] < 60 {
			t.Errorf("replica %d got %d of 400 ties", i, count[i])
		}
	}
	if diff := cmp.Diff(a, picks(11)); diff != "" {
		t.Errorf("same seed, different tie-breaks (-first +second):\n%s", diff)
	}
}

// Both cache-aware baselines record their picks in the overlay, so a burst
// sharing a new prefix lands together before any summary shows it.
func TestBaselinesOverlayColocatesABurst(t *testing.T) {
	for _, name := range []string{PolicyDynamoKV, PolicyLLMD} {
		t.Run(name, func(t *testing.T) {
			p := newPolicy(t, name, nil)
			cs := cands(8)
			first := -1
			for k := range uint32(6) {
				got, _ := mustPick(t, p, req(prompt(42, k, 96, 128)), cs)
				if first < 0 {
					first = got
				} else if got != first {
					t.Fatalf("request %d went to %d, the burst's first to %d", k, got, first)
				}
			}
		})
	}
}
