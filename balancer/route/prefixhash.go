package route

import "math"

// prefixHash places a prompt by rendezvous (highest random weight) hashing of
// the hash of its first PrefixBlocks blocks, with bounded load: the owner is
// the highest-ranked candidate whose load is under the bound, so a hot
// prefix spills to its second choice, and so on. Every balancer computes the
// same ranking from the same IDs, so they agree without sharing state; adding
// or removing a replica moves only the prefixes it wins or owned (about 1/N).
type prefixHash struct{ *base }

func (p *prefixHash) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	p.fillLoads(cands, s, p.now(req))
	d := Decision{Eligible: len(s.elig), UncachedTokens: req.promptTokens()}
	var k int
	if key, ok := p.prefixKey(req); !ok {
		k, d.Reason = p.leastLoaded(cands, s), ReasonNoPrefix
	} else {
		var spilled bool
		k, spilled = p.owner(cands, s, key)
		d.Reason = ReasonPrefixOwner
		if spilled {
			d.Reason = ReasonLoadSpill
		}
	}
	if len(s.elig) == 1 {
		d.Reason = ReasonOnlyCandidate
	}
	return int(s.elig[k]), d, nil
}

// prefixKey returns the hash naming the prompt's first PrefixBlocks blocks
// (its last block's hash when shorter); false when it has no full block.
func (b *base) prefixKey(req *Request) (uint64, bool) {
	if len(req.Hashes) == 0 {
		return 0, false
	}
	return uint64(req.Hashes[min(b.cfg.PrefixBlocks, len(req.Hashes))-1]), true
}

// owner returns the position in s.elig of the highest-ranked candidate for
// key that is under the load bound, and whether that is not the
// highest-ranked candidate overall (a spill). s.load must be filled.
func (b *base) owner(cands []Candidate, s *Scratch, key uint64) (k int, spilled bool) {
	total, weights := b.bound(cands, s)
	best, top := -1, -1
	bestS, topS := math.Inf(-1), math.Inf(-1)
	for j, i := range s.elig {
		c := &cands[i]
		r := rendezvous(key, c.key(), c.weight(), s.uniform)
		if r > topS {
			top, topS = j, r
		}
		if r > bestS && b.underBound(cands, s, j, total, weights) {
			best, bestS = j, r
		}
	}
	if best < 0 { // unreachable: some candidate is always under the bound
		best = top
	}
	return best, best != top
}

// rendezvous returns candidate id's rank for key. With uniform weights it is
// the mixed hash itself; otherwise the logarithmic method of weighted
// rendezvous hashing, w / -ln(u), which gives each candidate a share
// proportional to its weight.
func rendezvous(key, id uint64, w float64, uniform bool) float64 {
	h := mix64(key ^ mix64(id))
	if uniform {
		return float64(h >> 11)
	}
	u := (float64(h>>11) + 0.5) / (1 << 53)
	return w / -math.Log(u)
}
