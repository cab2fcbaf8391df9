package route

import (
	"math"
	"time"
)

// filter puts the indices of the eligible candidates in s.elig: serving the
// model, healthy, not excluded, able to hold the prompt and below their caps.
// It resets the per-decision buffers of s.
func filter(req *Request, cands []Candidate, s *Scratch) error {
	s.elig = s.elig[:0]
	s.load = s.load[:0]
	s.score = s.score[:0]
	s.queue = s.queue[:0]
	s.delay = s.delay[:0]
	s.uniform = true
	served := 0
	w0 := 0.0
	prompt := req.promptTokens()
	for i := range cands {
		c := &cands[i]
		if !c.Healthy || !c.serves(req.Model) || req.excluded(i) {
			continue
		}
		if c.CapacityBlocks > 0 {
			bs := c.BlockSize
			if bs <= 0 {
				bs = req.blockSize()
			}
			if (prompt+bs-1)/bs > c.CapacityBlocks {
				continue
			}
		}
		served++
		if c.full() {
			continue
		}
		w := c.weight()
		if len(s.elig) == 0 {
			w0 = w
		} else if w != w0 {
			s.uniform = false
		}
		s.elig = append(s.elig, int32(i))
	}
	switch {
	case len(s.elig) > 0:
		return nil
	case served > 0:
		return ErrAllFull
	default:
		return ErrNoCandidate
	}
}

// loadFresh reports whether c's load report may be used. The fleet judged
// its age (Load.Stale, by the gossip's load_max_age); the time is not read
// again here.
func (b *base) loadFresh(c *Candidate, _ time.Time) bool {
	return c.Load.Known && !c.Load.Stale
}

// summaryFresh reports whether c's prefix summary may be used for a request
// hashed with block size bs. The gossip judged its age (SummaryStale, by
// summary_max_age).
func (b *base) summaryFresh(c *Candidate, _ time.Time, bs int) bool {
	return c.Prefix != nil && !c.SummaryStale && (c.BlockSize == 0 || c.BlockSize == bs)
}

// fillLoads puts the load of each eligible candidate in s.load.
func (b *base) fillLoads(cands []Candidate, s *Scratch, now time.Time) {
	s.load = s.load[:0]
	for _, i := range s.elig {
		s.load = append(s.load, b.load(&cands[i], now))
	}
}

// bound returns the sums behind the bounded-load test of Mirrokni et al.
// (see underBound): the total load and the total weight of the eligible
// candidates. s.load must be filled.
func (b *base) bound(cands []Candidate, s *Scratch) (total, weights float64) {
	for k, i := range s.elig {
		total += s.load[k]
		weights += cands[i].weight()
	}
	return total, weights
}

// underBound reports whether eligible candidate k (a position in s.elig) may
// take one more request without exceeding LoadFactor × the weighted mean
// load, counting the new request: load_k < ceil(c × (total+1) × w_k / W),
// or load_k < MinLoadBound. Because the capacities sum to at least total+1,
// some candidate always passes.
func (b *base) underBound(cands []Candidate, s *Scratch, k int, total, weights float64) bool {
	w := cands[s.elig[k]].weight()
	capacity := math.Ceil(b.cfg.LoadFactor * (total + 1) * w / weights)
	return s.load[k] < max(capacity, float64(b.cfg.MinLoadBound))
}

// leastLoaded returns the position in s.elig of the candidate with the lowest
// load per weight, ties broken at random. s.load must be filled.
func (b *base) leastLoaded(cands []Candidate, s *Scratch) int {
	best, ties := -1, 0
	bestL := math.Inf(1)
	for k, i := range s.elig {
		l := s.load[k] / cands[i].weight()
		switch {
		case l < bestL:
			best, bestL, ties = k, l, 1
		case l == bestL:
			ties++
			if b.rng.intn(ties) == 0 {
				best = k
			}
		}
	}
	return best
}

// weighted returns the position in s.elig that x in [0,1) falls on when the
// eligible candidates share [0,1) by weight.
func weighted(cands []Candidate, s *Scratch, x float64) int {
	if s.uniform {
		return min(int(x*float64(len(s.elig))), len(s.elig)-1)
	}
	total := 0.0
	for _, i := range s.elig {
		total += cands[i].weight()
	}
	x *= total
	for k, i := range s.elig {
		x -= cands[i].weight()
		if x < 0 {
			return k
		}
	}
	return len(s.elig) - 1
}
