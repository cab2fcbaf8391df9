package route

import (
	"slices"
	"testing"
	"time"
)

// Without rotation (SpreadMargin 0), among near-equal candidates the
// prompt's rendezvous order decides, so different prompts spread over them
// and two balancers agree on one prompt.
func TestCostModelSpreadsNearTies(t *testing.T) {
	p := newPolicy(t, PolicyCostModel, func(c *Config) { c.SpreadMargin = 0 })
	q := newPolicy(t, PolicyCostModel, func(c *Config) { c.Seed = 99; c.SpreadMargin = 0 })
	picks := map[int]int{}
	for i := range 400 {
		cs := cands(4)
		for k := range cs {
			lease(cs[k].Own, k*20) // slightly different loads, within the margin
		}
		hs := prompt(uint32(1000+i), uint32(1000+i), 0, 64)
		got, _ := mustPick(t, p, req(hs), cs)
		other, _ := mustPick(t, q, req(hs), cs)
		if got != other {
			t.Fatalf("prompt %d: balancers picked %d and %d", i, got, other)
		}
		picks[got]++
	}
	for k := range 4 {
		if picks[k] < 60 {
			t.Errorf("replica %d got %d of 400 near-tied picks, want a spread: %v", k, picks[k], picks)
		}
	}
	// Outside the margin the lowest score wins.
	cs := cands(4)
	lease(cs[1].Own, 30000)
	lease(cs[2].Own, 30000)
	lease(cs[3].Own, 30000)
	for i := range 50 {
		if got, _ := mustPick(t, p, req(prompt(uint32(i), uint32(i), 0, 64)), cs); got != 0 {
			t.Fatalf("prompt %d went to %d, not the idle replica", i, got)
		}
	}
}

// Among near ties the fewer requests in flight win within the prompt's
// rendezvous pair: a replica with fewer decodes than the others takes the
// prompts whose pair holds it (half of them with 4 replicas), not a
// quarter, and the others still get their share. Uniform among ties, the
// decodes on W6's replicas drifted apart (22 against 34).
func TestCostModelNearTiesFavourFewerInFlight(t *testing.T) {
	p := newPolicy(t, PolicyCostModel, func(c *Config) { c.SpreadMargin = 0 })
	picks := map[int]int{}
	for i := range 400 {
		cs := cands(4)
		for k := range cs {
			n := 30
			if k == 2 {
				n = 20
			}
			for range n { // decoding: in flight, past their prefill
				cs[k].Own.Prefilled(0, lease(cs[k].Own, 0), time.Time{})
			}
		}
		got, d := mustPick(t, p, req(prompt(uint32(2000+i), uint32(2000+i), 0, 64)), cs)
		if d.Reason != ReasonLowestTTFT {
			t.Fatalf("prompt %d: reason %s, want a near tie among lowest TTFTs", i, d.Reason)
		}
		picks[got]++
	}
	if picks[2] < 160 || picks[2] > 240 {
		t.Errorf("the replica with 20 in flight got %d of 400 near-tied picks, want about half: %v", picks[2], picks)
	}
	for _, k := range []int{0, 1, 3} {
		if picks[k] < 40 {
			t.Errorf("replica %d got %d of 400, want a share: %v", k, picks[k], picks)
		}
	}
}

// A prompt no near-equal candidate holds any of goes to them in turn: four
// replicas within the spread margin take eight such prompts twice each, one
// after another, and a replica whose queue is out of the margin takes none;
// where a candidate in the margin holds part of the prompt the cache wins
// (TestCostModelNearTiesPreferTheCache).
func TestCostModelRotatesUncachedNearTies(t *testing.T) {
	p := newPolicy(t, PolicyCostModel, nil)
	cs := cands(5)
	for k := range 4 {
		lease(cs[k].Own, 1024+k*200) // near-equal queues
	}
	lease(cs[4].Own, 20*1024) // far out of the margin
	var order []int
	rotated := 0
	for i := range 8 {
		got, d := mustPick(t, p, req(prompt(uint32(3000+i), uint32(3000+i), 0, 64)), cs)
		if got == 4 {
			t.Fatalf("prompt %d went to the replica far out of the margin (scores %v)", i, d.Scores)
		}
		order = append(order, got)
		// The decision says so when the turn, not the estimate, chose.
		lowest := d.Scores[got] == slices.Min(d.Scores)
		switch {
		case d.Reason == ReasonRotation && !lowest:
			rotated++
		case d.Reason != ReasonLowestTTFT || !lowest:
			t.Errorf("prompt %d: pick %d (%q) with scores %v, want lowest_ttft for the lowest, rotation otherwise", i, got, d.Reason, d.Scores)
		}
	}
	if rotated == 0 {
		t.Errorf("no pick said rotation: %v", order)
	}
	for i := 4; i < 8; i++ {
		if order[i] != order[i-4] {
			t.Fatalf("picks %v, want each of the four near-equal replicas in turn", order)
		}
	}
	seen := map[int]bool{}
	for _, k := range order[:4] {
		seen[k] = true
	}
	if len(seen) != 4 {
		t.Fatalf("picks %v, want each of the four near-equal replicas in turn", order)
	}
	// Without rotation the same prompts follow their rendezvous pairs.
	q := newPolicy(t, PolicyCostModel, func(c *Config) { c.SpreadMargin = 0 })
	same := 0
	for i := range 8 {
		got, _ := mustPick(t, q, req(prompt(uint32(3000+i), uint32(3000+i), 0, 64)), cs)
		if got == order[i] {
			same++
		}
	}
	if same == 8 {
		t.Errorf("SpreadMargin 0 picked as the rotation did: %v", order)
	}
}

// Among near-equal candidates the one holding the prompt wins: a short
// prompt costs one engine step warm or cold, so its estimate barely differs,
// but the hit is free.
func TestCostModelNearTiesPreferTheCache(t *testing.T) {
	hs := prompt(21, 21, 16, 18) // 288 tokens, 256 of them shared
	for i := range 50 {
		cs := cands(4)
		warm := i % 4
		cs[warm].Prefix = fakeIndex{}.add(hs[:16])
		p := newPolicy(t, PolicyCostModel, func(c *Config) { c.Seed = uint64(i) })
		got, d := mustPick(t, p, req(hs), cs)
		if got != warm {
			t.Fatalf("case %d: picked %d (scores %v), want the warm replica %d", i, got, d.Scores, warm)
		}
	}
}

// Balancers with one config differ in their seeds (each mixes its name in);
// their rotations start at different candidates, so the first prompts no
// replica holds, sent through different balancers, do not all go to one
// replica. (On W3 with 4 balancers every balancer's first such pick went to
// one replica, which then held both groups' system prompts and kept their
// sessions: hit rate 0.808 against one balancer's 0.846, docs/routing-findings.md.)
// One seed makes the same first pick every time.
func TestCostModelRotationStartsBySeed(t *testing.T) {
	first := map[int]bool{}
	for seed := uint64(1); seed <= 4; seed++ {
		pick := func() int {
			p := newPolicy(t, PolicyCostModel, func(c *Config) { c.Seed = seed })
			got, _ := mustPick(t, p, req(prompt(4000, 4000, 0, 64)), cands(4))
			return got
		}
		a, b := pick(), pick()
		if a != b {
			t.Fatalf("seed %d: first picks %d and %d, want one pick per seed", seed, a, b)
		}
		first[a] = true
	}
	if len(first) < 2 {
		t.Fatalf("four seeds made the same first pick %v, want their rotations to start apart", first)
	}
}
