package route

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/inferrail/inferrail/internal/load"
)

// randomWorld returns a random candidate set and request: random health,
// models, caps (some reached), weights, load freshness, summaries, block sizes
// and capacities, and random excluded indices.
func randomWorld(r *rand.Rand) ([]Candidate, *Request) {
	hashes := prompt(r.Uint32N(3), r.Uint32(), r.IntN(20), r.IntN(40))
	rq := &Request{Model: "m", Hashes: hashes, BlockSize: 16, Now: t0}
	if r.IntN(2) == 0 {
		rq.PromptTokens = 16*len(hashes) + r.IntN(16)
	}
	n := r.IntN(12)
	cs := make([]Candidate, n)
	for i := range cs {
		c := Candidate{
			ID:      fmt.Sprintf("node-%d", r.IntN(1000)),
			Healthy: r.IntN(5) != 0,
			Weight:  []float64{0, 1, 2, 0.5}[r.IntN(4)],
		}
		switch r.IntN(4) {
		case 0:
			c.Models = []string{"other"}
		case 1:
			c.Models = []string{"other", "m"}
		case 2:
			c.Models = nil
		default:
			c.Models = []string{"m"}
		}
		if r.IntN(5) != 0 {
			c.Own = &Counters{}
			in := r.IntN(5)
			c.Own.InFlight.Store(int64(in))
			c.Own.Pending.Store(int64(r.IntN(in + 1)))
			c.Own.PendingPrefillTokens.Store(int64(r.IntN(20000)))
			c.MaxConcurrency = r.IntN(5)
			c.MaxPending = r.IntN(4)
		}
		if r.IntN(4) != 0 {
			pending := r.Int64N(20)
			c.Load = Load{
				Known: true, Stale: r.IntN(4) == 0, Exact: r.IntN(2) == 0,
				Report: load.Report{Running: r.Int64N(50), Waiting: pending + r.Int64N(3), InFlight: pending + r.Int64N(60),
					Pending: pending, PrefillTokens: r.Int64N(100000), KVUsage: r.Float64()},
				Own: load.Share{InFlight: r.Int64N(3), Pending: r.Int64N(2), PrefillTokens: r.Int64N(2000)},
			}
		}
		if r.IntN(4) != 0 {
			c.Prefix = fakeIndex{}.add(hashes[:r.IntN(len(hashes)+1)])
			c.SummaryStale = r.IntN(5) == 0
		}
		c.BlockSize = []int{0, 16, 16, 32}[r.IntN(4)]
		if r.IntN(4) == 0 {
			c.CapacityBlocks = r.IntN(40)
		}
		cs[i] = c
	}
	if r.IntN(2) == 0 {
		Prepare(cs)
	}
	for range r.IntN(3) {
		if n > 0 {
			rq.Exclude = append(rq.Exclude, r.IntN(n))
		}
	}
	return cs, rq
}

// eligibility is the filter's specification, written independently of it:
// whether candidate i serves the request at all (healthy, serves the model,
// not excluded, can hold the prompt) and whether it is also below its caps.
func eligibility(rq *Request, cs []Candidate, i int) (serves, eligible bool) {
	c := cs[i]
	serves = c.Healthy
	found := false
	for _, m := range c.Models {
		found = found || m == rq.Model
	}
	serves = serves && found
	for _, x := range rq.Exclude {
		serves = serves && x != i
	}
	if c.CapacityBlocks > 0 {
		bs := c.BlockSize
		if bs == 0 {
			bs = 16
		}
		tokens := rq.PromptTokens
		if tokens == 0 {
			tokens = max(16*len(rq.Hashes), 1)
		}
		serves = serves && (tokens+bs-1)/bs <= c.CapacityBlocks
	}
	if !serves {
		return false, false
	}
	if c.Own != nil {
		if c.MaxConcurrency > 0 && c.Own.InFlight.Load() >= int64(c.MaxConcurrency) {
			return true, false
		}
		if c.MaxPending > 0 && c.Own.Pending.Load() >= int64(c.MaxPending) {
			return true, false
		}
	}
	return true, true
}

// checkPick verifies one decision against the specification.
func checkPick(t *testing.T, name string, cs []Candidate, rq *Request, i int, d Decision, err error) {
	t.Helper()
	served, eligible := 0, 0
	for j := range cs {
		s, e := eligibility(rq, cs, j)
		if s {
			served++
		}
		if e {
			eligible++
		}
	}
	switch {
	case eligible == 0 && served > 0:
		if !errors.Is(err, ErrAllFull) {
			t.Fatalf("%s: no eligible but %d served: got (%d, %v), want ErrAllFull", name, served, i, err)
		}
		return
	case eligible == 0:
		if !errors.Is(err, ErrNoCandidate) {
			t.Fatalf("%s: nothing serves: got (%d, %v), want ErrNoCandidate", name, i, err)
		}
		return
	case err != nil:
		t.Fatalf("%s: %d eligible, got error %v", name, eligible, err)
	}
	if i < 0 || i >= len(cs) {
		t.Fatalf("%s: picked index %d of %d", name, i, len(cs))
	}
	if _, e := eligibility(rq, cs, i); !e {
		t.Fatalf("%s: picked ineligible candidate %d: %+v", name, i, cs[i])
	}
	if d.Eligible != eligible {
		t.Errorf("%s: Decision.Eligible = %d, want %d", name, d.Eligible, eligible)
	}
	prompt := rq.promptTokens()
	if d.CachedTokens+d.UncachedTokens != prompt || d.CachedTokens < 0 || d.UncachedTokens < 1 {
		t.Errorf("%s: cached %d + uncached %d, want a split of %d with at least one uncached",
			name, d.CachedTokens, d.UncachedTokens, prompt)
	}
	if d.Cached == nil {
		return
	}
	if len(d.Cached) != len(cs) {
		t.Fatalf("%s: len(Decision.Cached) = %d, want %d", name, len(d.Cached), len(cs))
	}
	for j, c := range d.Cached {
		_, e := eligibility(rq, cs, j)
		if !e && c != -1 || e && (c < 0 || int(c) > prompt-1 || int(c)%16 != 0) {
			t.Errorf("%s: Cached[%d] = %d (eligible %v, prompt %d)", name, j, c, e, prompt)
		}
	}
	if d.Scores != nil {
		if len(d.Scores) != len(cs) {
			t.Fatalf("%s: len(Decision.Scores) = %d, want %d", name, len(d.Scores), len(cs))
		}
		for j, sc := range d.Scores {
			if _, e := eligibility(rq, cs, j); e == math.IsNaN(sc) {
				t.Errorf("%s: Scores[%d] = %v, eligible %v", name, j, sc, e)
			}
		}
		if d.Scores[i] != d.Score {
			t.Errorf("%s: Scores[pick] = %v, Score = %v", name, d.Scores[i], d.Score)
		}
	}
	if int(d.Cached[i]) != d.CachedTokens {
		t.Errorf("%s: Cached[pick] = %d, CachedTokens = %d", name, d.Cached[i], d.CachedTokens)
	}
}

// No policy ever picks an unhealthy, full, excluded or wrong-model
// candidate; when one is eligible, every policy picks an eligible one; the
// errors say which case applies.
func TestNoPolicyPicksAnIneligibleCandidate(t *testing.T) {
	for _, name := range allPolicies() {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(len(name))))
			p := newPolicy(t, name, nil)
			s := &Scratch{} // reused across decisions, as on the request path
			for range 3000 {
				cs, rq := randomWorld(r)
				i, d, err := p.Pick(rq, cs, s)
				checkPick(t, name, cs, rq, i, d, err)
			}
		})
	}
}

func FuzzPick(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(0), uint64(0))
	f.Add(uint64(1<<63), uint64(12345))
	pols := make([]Policy, len(allPolicies()))
	for k, name := range allPolicies() {
		pols[k] = newPolicy(f, name, nil)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		for _, p := range pols {
			cs, rq := randomWorld(rand.New(rand.NewPCG(a, b)))
			i, d, err := p.Pick(rq, cs, nil)
			checkPick(t, p.Name(), cs, rq, i, d, err)
		}
	})
}

// Candidates serving nothing, or nothing at all, give ErrNoCandidate; all
// at their caps gives ErrAllFull.
func TestPickErrors(t *testing.T) {
	full := cands(2)
	for i := range full {
		full[i].MaxConcurrency = 1
		full[i].Own.InFlight.Store(1)
	}
	wrong := cands(2)
	for i := range wrong {
		wrong[i].Models = []string{"other"}
	}
	sick := cands(2)
	for i := range sick {
		sick[i].Healthy = false
	}
	excluded := cands(2)
	for _, tc := range []struct {
		name string
		cs   []Candidate
		ex   []int
		want error
	}{
		{"none", nil, nil, ErrNoCandidate},
		{"wrong model", wrong, nil, ErrNoCandidate},
		{"unhealthy", sick, nil, ErrNoCandidate},
		{"all tried", excluded, []int{0, 1}, ErrNoCandidate},
		{"all full", full, nil, ErrAllFull},
	} {
		for _, name := range allPolicies() {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				rq := req(prompt(1, 1, 4, 8))
				rq.Exclude = tc.ex
				_, _, err := newPolicy(t, name, nil).Pick(rq, tc.cs, nil)
				if !errors.Is(err, tc.want) {
					t.Errorf("Pick() error = %v, want %v", err, tc.want)
				}
			})
		}
	}
}
