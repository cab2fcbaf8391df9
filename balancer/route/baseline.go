package route

import "sync/atomic"

// The cache-blind baselines. They ignore the prompt; Decision.Cached is nil.

// roundRobin cycles through the eligible candidates with an atomic counter.
// With unequal weights it walks the weight line with a golden-ratio sequence,
// which gives each candidate its weighted share, well spread.
type roundRobin struct {
	*base
	n atomic.Uint64
}

func (p *roundRobin) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	var n uint64
	if req.DryRun {
		n = p.n.Load()
	} else {
		n = p.n.Add(1) - 1
	}
	var k int
	if s.uniform {
		k = int(n % uint64(len(s.elig)))
	} else {
		const phi = 0.6180339887498949
		x := float64(n) * phi
		k = weighted(cands, s, x-float64(uint64(x)))
	}
	return blind(req, s, k, ReasonRoundRobin)
}

// random picks an eligible candidate at random, by weight.
type random struct{ *base }

func (p *random) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	return blind(req, s, weighted(cands, s, p.rng.float()), ReasonRandom)
}

// leastRequest picks the candidate with the fewest requests in flight per
// weight, ties at random.
type leastRequest struct{ *base }

func (p *leastRequest) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	p.fillLoads(cands, s, p.now(req))
	return blind(req, s, p.leastLoaded(cands, s), ReasonLeastRequest)
}

// p2c draws two distinct eligible candidates at random and picks the less
// loaded per weight (the power of two choices).
type p2c struct{ *base }

func (p *p2c) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	n := len(s.elig)
	if n == 1 {
		return blind(req, s, 0, ReasonOnlyCandidate)
	}
	a := p.rng.intn(n)
	b := p.rng.intn(n - 1)
	if b >= a {
		b++
	}
	now := p.now(req)
	ca, cb := &cands[s.elig[a]], &cands[s.elig[b]]
	la, lb := p.load(ca, now)/ca.weight(), p.load(cb, now)/cb.weight()
	k := a
	if lb < la || lb == la && p.rng.next()&1 == 0 {
		k = b
	}
	return blind(req, s, k, ReasonP2C)
}

// blind returns the pick at position k of s.elig for a cache-blind policy.
func blind(req *Request, s *Scratch, k int, r Reason) (int, Decision, error) {
	if len(s.elig) == 1 {
		r = ReasonOnlyCandidate
	}
	d := Decision{Reason: r, Eligible: len(s.elig), UncachedTokens: req.promptTokens()}
	return int(s.elig[k]), d, nil
}
