package route

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoundRobinCyclesThroughEligible(t *testing.T) {
	cs := cands(4)
	cs[2].Healthy = false
	p := newPolicy(t, PolicyRoundRobin, nil)
	var got []int
	for range 6 {
		i, _ := mustPick(t, p, req(nil), cs)
		got = append(got, i)
	}
	if diff := cmp.Diff([]int{0, 1, 3, 0, 1, 3}, got); diff != "" {
		t.Errorf("round robin order mismatch (-want +got):\n%s", diff)
	}
}

// Every baseline gives each candidate its weighted share (within a wide
// band: the RNG is seeded, so this is deterministic, not flaky).
func TestBaselinesHonourWeights(t *testing.T) {
	for _, name := range []string{PolicyRoundRobin, PolicyRandom} {
		t.Run(name, func(t *testing.T) {
			cs := cands(3)
			cs[0].Weight, cs[1].Weight, cs[2].Weight = 1, 2, 5
			p := newPolicy(t, name, nil)
			const n = 8000
			count := make([]int, 3)
			s := &Scratch{}
			for range n {
				i, _, err := p.Pick(req(nil), cs, s)
				if err != nil {
					t.Fatal(err)
				}
				count[i]++
			}
			for i, w := range []float64{1, 2, 5} {
				want := n * w / 8
				if got := float64(count[i]); got < 0.9*want || got > 1.1*want {
					t.Errorf("candidate %d (weight %v): %d picks, want about %.0f", i, w, count[i], want)
				}
			}
		})
	}
}

func TestLeastRequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		own      []int64 // own in-flight per candidate
		gossip   []int   // gossiped running per candidate (fresh)
		stale    bool
		weights  []float64
		want     int
		wantSome []int // any of these (ties)
	}{
		{name: "fewest own", own: []int64{3, 1, 2}, want: 1},
		{name: "gossip counts other balancers", own: []int64{0, 1, 2}, gossip: []int{9, 0, 0}, want: 1},
		{name: "stale gossip ignored", own: []int64{0, 1, 2}, gossip: []int{9, 0, 0}, stale: true, want: 0},
		{name: "per weight", own: []int64{2, 3, 2}, weights: []float64{1, 4, 1}, want: 1},
		{name: "ties", own: []int64{1, 0, 0}, wantSome: []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cands(len(tc.own))
			for i := range cs {
				cs[i].Own.InFlight.Store(tc.own[i])
				if tc.gossip != nil {
					cs[i].Load.Running = int64(tc.gossip[i])
					cs[i].Load.Stale = tc.stale
				}
				if tc.weights != nil {
					cs[i].Weight = tc.weights[i]
				}
			}
			p := newPolicy(t, PolicyLeastRequest, nil)
			seen := map[int]bool{}
			for range 50 {
				i, d := mustPick(t, p, req(nil), cs)
				seen[i] = true
				if d.Reason != ReasonLeastRequest {
					t.Errorf("reason = %q", d.Reason)
				}
			}
			want := map[int]bool{tc.want: true}
			if tc.wantSome != nil {
				want = map[int]bool{}
				for _, i := range tc.wantSome {
					want[i] = true
				}
			}
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("picked set mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// p2c never picks the most loaded of three, and with two always picks the
// less loaded.
func TestP2C(t *testing.T) {
	cs := cands(3)
	for i, l := range []int64{5, 1, 3} {
		cs[i].Own.InFlight.Store(l)
	}
	p := newPolicy(t, PolicyP2C, nil)
	count := make([]int, 3)
	for range 600 {
		i, _ := mustPick(t, p, req(nil), cs)
		count[i]++
	}
	if count[0] != 0 {
		t.Errorf("p2c picked the most loaded candidate %d times", count[0])
	}
	if count[1] <= count[2] {
		t.Errorf("p2c picks %v: the least loaded should win every draw it is in", count)
	}
	two := cs[1:]
	for range 20 {
		if i, _ := mustPick(t, p, req(nil), two); i != 0 {
			t.Fatalf("p2c over two picked %d, want the less loaded 0", i)
		}
	}
}

// Two policies with the same seed make the same random choices.
func TestSeededPoliciesRepeat(t *testing.T) {
	for _, name := range []string{PolicyRandom, PolicyP2C} {
		a, b := newPolicy(t, name, nil), newPolicy(t, name, nil)
		cs := cands(16)
		for i := range 100 {
			x, _ := mustPick(t, a, req(nil), cs)
			y, _ := mustPick(t, b, req(nil), cs)
			if x != y {
				t.Fatalf("%s: pick %d differs between equal seeds: %d vs %d", name, i, x, y)
			}
		}
	}
}
