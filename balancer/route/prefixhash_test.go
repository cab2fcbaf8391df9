package route

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Prompts that share their first PrefixBlocks blocks land together, whatever
// follows, and two balancers (different seeds, fresh state) agree.
func TestPrefixHashAgreesAcrossBalancers(t *testing.T) {
	cs := cands(16)
	a := newPolicy(t, PolicyPrefixHash, func(c *Config) { c.Seed = 1 })
	b := newPolicy(t, PolicyPrefixHash, func(c *Config) { c.Seed = 99 })
	for g := range uint32(50) {
		first, _ := mustPick(t, a, req(prompt(g, 0, 8, 20)), cs)
		for u := range uint32(5) {
			x, d := mustPick(t, a, req(prompt(g, u, 8, 10+int(u))), cs)
			y, _ := mustPick(t, b, req(prompt(g, u, 8, 10+int(u))), cs)
			if x != first || y != first {
				t.Fatalf("group %d: picks %d and %d, want %d for every prompt of the group", g, x, y, first)
			}
			if d.Reason != ReasonPrefixOwner {
				t.Errorf("reason = %q, want %q", d.Reason, ReasonPrefixOwner)
			}
		}
	}
}

// Adding an (N+1)th replica moves about 1/(N+1) of the prefixes, all of them
// to the new replica; removing it moves them back.
func TestPrefixHashStability(t *testing.T) {
	const n, prefixes = 10, 4000
	p := newPolicy(t, PolicyPrefixHash, nil)
	before, after := cands(n), cands(n+1)
	after[n].ID = "new-replica"
	Prepare(after)
	moved := 0
	for g := range uint32(prefixes) {
		r := req(prompt(g, 0, 8, 8))
		x, _ := mustPick(t, p, r, before)
		y, _ := mustPick(t, p, r, after)
		if x != y {
			moved++
			if y != n {
				t.Fatalf("prefix %d moved from %d to %d, not to the new replica", g, x, y)
			}
		}
	}
	want := prefixes / (n + 1)
	if moved < want*3/4 || moved > want*5/4 {
		t.Errorf("adding a replica moved %d of %d prefixes, want about %d", moved, prefixes, want)
	}
}

// Weighted rendezvous gives each replica a share of prefixes proportional to
// its weight.
func TestPrefixHashWeights(t *testing.T) {
	cs := cands(3)
	cs[0].Weight, cs[1].Weight, cs[2].Weight = 1, 1, 2
	p := newPolicy(t, PolicyPrefixHash, nil)
	count := make([]int, 3)
	const prefixes = 8000
	for g := range uint32(prefixes) {
		i, _ := mustPick(t, p, req(prompt(g, 0, 8, 8)), cs)
		count[i]++
	}
	for i, share := range []float64{0.25, 0.25, 0.5} {
		if got := float64(count[i]) / prefixes; got < share-0.03 || got > share+0.03 {
			t.Errorf("replica %d (share %v) owns %.3f of prefixes", i, share, got)
		}
	}
}

func TestPrefixHashBoundedLoad(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ownerLoad  int64
		otherLoad  int64
		minBound   int
		wantSpill  bool
		wantReason Reason
	}{
		// 8 replicas, others at 2, owner at 3: total 17, bound ceil(1.25·18/8) = 3.
		{name: "at the bound spills", ownerLoad: 3, otherLoad: 2, wantSpill: true, wantReason: ReasonLoadSpill},
		{name: "under the bound stays", ownerLoad: 2, otherLoad: 2, wantReason: ReasonPrefixOwner},
		{name: "far above spills", ownerLoad: 40, otherLoad: 2, wantSpill: true, wantReason: ReasonLoadSpill},
		{name: "min bound keeps a light burst together", ownerLoad: 3, otherLoad: 0, minBound: 8, wantReason: ReasonPrefixOwner},
		{name: "min bound is a floor only", ownerLoad: 9, otherLoad: 0, minBound: 8, wantSpill: true, wantReason: ReasonLoadSpill},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, PolicyPrefixHash, func(c *Config) { c.MinLoadBound, c.LoadFactor = tc.minBound, 1.25 })
			cs := cands(8)
			r := req(prompt(42, 0, 8, 8))
			owner, _ := mustPick(t, p, r, cs)
			for i := range cs {
				cs[i].Own.InFlight.Store(tc.otherLoad)
			}
			cs[owner].Own.InFlight.Store(tc.ownerLoad)
			got, d := mustPick(t, p, r, cs)
			if (got != owner) != tc.wantSpill || d.Reason != tc.wantReason {
				t.Errorf("pick %d (owner %d) reason %q, want spill %v reason %q", got, owner, d.Reason, tc.wantSpill, tc.wantReason)
			}
			if tc.wantSpill {
				// The spill is the second in rendezvous order: the pick
				// without the owner.
				cs[owner].Healthy = false
				second, _ := mustPick(t, p, r, cs)
				if got != second {
					t.Errorf("spilled to %d, want the next in rendezvous order %d", got, second)
				}
			}
		})
	}
}

// A burst on one prefix never drives any replica above the bound.
func TestPrefixHashBurstRespectsBound(t *testing.T) {
	p := newPolicy(t, PolicyPrefixHash, func(c *Config) { c.MinLoadBound, c.LoadFactor = 0, 1.25 })
	cs := cands(8)
	r := req(prompt(7, 0, 8, 8))
	total := 0
	for range 200 {
		i, _ := mustPick(t, p, r, cs)
		cs[i].Own.InFlight.Add(1)
		total++
		bound := 1.25*float64(total)/8 + 1
		for j := range cs {
			if l := float64(cs[j].Own.InFlight.Load()); l > bound {
				t.Fatalf("after %d requests replica %d holds %v > bound %v", total, j, l, bound)
			}
		}
	}
}

func TestPrefixHashWithoutFullBlockPicksLeastLoaded(t *testing.T) {
	cs := cands(3)
	for i, l := range []int64{4, 0, 2} {
		cs[i].Own.InFlight.Store(l)
	}
	i, d := mustPick(t, newPolicy(t, PolicyPrefixHash, nil), req(nil), cs)
	if i != 1 || d.Reason != ReasonNoPrefix {
		t.Errorf("got %d %q, want 1 %q", i, d.Reason, ReasonNoPrefix)
	}
}

func ExamplePrepare() {
	cs := []Candidate{
		{ID: "a", Models: []string{"llama"}, Healthy: true},
		{ID: "b", Models: []string{"llama"}, Healthy: true, MaxConcurrency: 1, Own: &Counters{}},
	}
	Prepare(cs)
	lease(cs[1].Own, 100) // b is now full
	cfg := DefaultConfig()
	cfg.Policy = PolicyPrefixHash
	p, _ := New(cfg)
	i, d, err := p.Pick(&Request{Model: "llama"}, cs, NewScratch(len(cs)))
	fmt.Println(cs[i].ID, d.Reason, err)
	// Output: a only_candidate <nil>
}

// prefix_hash never picks a candidate at or above its bounded-load capacity,
// over random loads, weights and prompts (cost_model bounds work instead:
// TestCostModelWorkBoundProperty).
func TestBoundedLoadProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for _, name := range []string{PolicyPrefixHash} {
		t.Run(name, func(t *testing.T) {
			p := newPolicy(t, name, func(c *Config) { c.MinLoadBound, c.LoadFactor = 0, 1.25; c.Cost.HotPrefixQueueWait = 0 })
			for range 2000 {
				cs := cands(1 + r.IntN(12))
				total, weights := 0.0, 0.0
				for i := range cs {
					cs[i].Own.InFlight.Store(int64(r.IntN(20)))
					cs[i].Weight = []float64{1, 1, 2, 3}[r.IntN(4)]
					cs[i].Load.Known = false
					total += float64(cs[i].Own.InFlight.Load())
					weights += cs[i].Weight
				}
				hs := prompt(r.Uint32N(5), r.Uint32(), 8, 8+r.IntN(20))
				if r.IntN(2) == 0 {
					cs[r.IntN(len(cs))].Prefix = fakeIndex{}.add(hs)
				}
				i, _ := mustPick(t, p, req(hs), cs)
				capacity := math.Ceil(1.25 * (total + 1) * cs[i].Weight / weights)
				if l := float64(cs[i].Own.InFlight.Load()); l >= capacity {
					t.Fatalf("picked %d with load %v >= capacity %v (total %v)", i, l, capacity, total)
				}
			}
		})
	}
}
