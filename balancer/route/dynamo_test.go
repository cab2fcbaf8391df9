package route

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// dynamoFleet returns four candidates with fresh, idle load reports of
// capacity 1000 blocks; candidate 2 holds the first warm blocks of hs.
func dynamoFleet(hs []kvblock.Hash, warm int) []Candidate {
	cs := cands(4)
	for i := range cs {
		cs[i].CapacityBlocks = 1000
	}
	cs[2].Prefix = fakeIndex{}.add(hs[:warm])
	return cs
}

func TestDynamoCosts(t *testing.T) {
	// A 128-block prompt; the warm replica 2 holds 96 blocks. With the
	// defaults the cost is max(0, prefill - cached) + active + (128 -
	// cached), in blocks: warm 32 + 32 + active, cold 128 + 128 + active.
	hs := prompt(4, 4, 96, 128)
	for _, tc := range []struct {
		name  string
		edit  func(cs []Candidate)
		cfg   func(*DynamoConfig)
		want  int
		costs []float64 // per candidate
	}{
		{name: "the warm replica wins at equal load", want: 2, costs: []float64{256, 256, 64, 256}},
		{name: "decode blocks from the reported KV usage: 191 active keep it warm",
			edit: func(cs []Candidate) { cs[2].Load.KVUsage = 0.191 }, want: 2, costs: []float64{256, 256, 255, 256}},
		{name: "193 active blocks tip it to a cold one",
			edit: func(cs []Candidate) { cs[2].Load.KVUsage = 0.193 }, want: -1, costs: []float64{256, 256, 257, 256}},
		{name: "other origins' pending prefill tokens count as pending prefill",
			edit: func(cs []Candidate) {
				cs[2].Load.Exact, cs[2].Load.PrefillTokens = true, 200*16
			}, want: -1, costs: []float64{256, 256, 264, 256}},
		{name: "a stale report: own pending prefill and in-flight × assumed context",
			edit: func(cs []Candidate) {
				for i := range cs {
					cs[i].Load.Stale = true
				}
				cs[2].Own.PendingPrefillTokens.Store(16 * 100)
				cs[0].Own.InFlight.Store(2) // 2 × 2048/16 blocks
			}, want: 2, costs: []float64{512, 256, 164, 256}},
		{name: "overlap_score_weight weighs prefill against decode",
			cfg:  func(c *DynamoConfig) { c.OverlapScoreWeight = 2 },
			edit: func(cs []Candidate) { cs[1].Load.KVUsage = 0.1 }, want: 2, costs: []float64{384, 484, 96, 384}},
		{name: "overlap_score_credit credits part of each cached block",
			cfg: func(c *DynamoConfig) { c.OverlapScoreCredit = 0.5 }, want: 2, costs: []float64{256, 256, 112, 256}},
		{name: "a weight of 0 balances decode blocks only",
			cfg:  func(c *DynamoConfig) { c.OverlapScoreWeight = 0 },
			edit: func(cs []Candidate) { cs[2].Load.KVUsage, cs[0].Load.KVUsage, cs[3].Load.KVUsage = 0.2, 0.05, 0.01 },
			want: 1, costs: []float64{178, 128, 232, 138}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, PolicyDynamoKV, func(c *Config) {
				if tc.cfg != nil {
					tc.cfg(&c.Baselines.Dynamo)
				}
			})
			cs := dynamoFleet(hs, 96)
			if tc.edit != nil {
				tc.edit(cs)
			}
			got, d := mustPick(t, p, req(hs), cs)
			if tc.want >= 0 && got != tc.want || tc.want < 0 && got == 2 {
				t.Errorf("pick %d, want %d; costs %v", got, tc.want, d.Scores)
			}
			if diff := cmp.Diff(tc.costs, d.Scores, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
				t.Errorf("costs (-want +got):\n%s", diff)
			}
			if d.Score != d.Scores[got] || d.Reason != ReasonDynamoLowestCost {
				t.Errorf("Score %v Reason %s, want the pick's cost and %s", d.Score, d.Reason, ReasonDynamoLowestCost)
			}
		})
	}
}

// At temperature 0 equal costs are broken at random, reproducibly by seed;
// with a temperature the pick is a softmax sample over the costs normalised
// by their range, and its frequencies follow exp(-(c-min)/((max-min) T)).
func TestDynamoTiesAndTemperature(t *testing.T) {
	hs := prompt(8, 8, 0, 64)
	picks := func(seed uint64, temp float64, edit func(cs []Candidate), n int) []int {
		p := newPolicy(t, PolicyDynamoKV, func(c *Config) {
			c.Seed, c.Baselines.Dynamo.RouterTemperature = seed, temp
			c.Overlay.TTL = 0 // every pick sees the same costs
		})
		cs := dynamoFleet(hs, 0)
		if edit != nil {
			edit(cs)
		}
		out := make([]int, n)
		for k := range out {
			out[k], _ = mustPick(t, p, req(hs), cs)
		}
		return out
	}
	ties := picks(3, 0, nil, 400)
	count := map[int]int{}
	for _, i := range ties {
		count[i]++
	}
	for i := range 4 {
		if count[i] < 60 {
			t.Errorf("tie among 4 at temperature 0: replica %d got %d of 400", i, count[i])
		}
	}
	if diff := cmp.Diff(ties, picks(3, 0, nil, 400)); diff != "" {
		t.Errorf("same seed, different tie-breaks (-first +second):\n%s", diff)
	}

	// Costs 128 + 0, 10, 20, 40 active blocks; T = 0.5.
	usage := []float64{0, 0.01, 0.02, 0.04}
	edit := func(cs []Candidate) {
		for i := range cs {
			cs[i].Load.KVUsage = usage[i]
		}
	}
	const n, temp = 20000, 0.5
	sampled := picks(5, temp, edit, n)
	count = map[int]int{}
	for _, i := range sampled {
		count[i]++
	}
	var want [4]float64
	sum := 0.0
	for i, u := range usage {
		want[i] = math.Exp(-(u * 1000) / (40 * temp))
		sum += want[i]
	}
	for i := range want {
		got := float64(count[i]) / n
		if math.Abs(got-want[i]/sum) > 0.015 {
			t.Errorf("replica %d sampled %.3f of the time, want %.3f", i, got, want[i]/sum)
		}
	}
	if diff := cmp.Diff(sampled[:200], picks(5, temp, edit, 200)); diff != "" {
		t.Errorf("same seed, different samples (-first +second):\n%s", diff)
	}
	_, d := mustPick(t, newPolicy(t, PolicyDynamoKV, func(c *Config) { c.Baselines.Dynamo.RouterTemperature = 1 }), req(hs), dynamoFleet(hs, 0))
	if d.Reason != ReasonDynamoSampled {
		t.Errorf("reason %s with a temperature, want %s", d.Reason, ReasonDynamoSampled)
	}
}
