package route

import (
	"math"
	"slices"
)

// sglangCacheAware re-implements the SGLang router's cache_aware policy
// (docs/baselines.md; smg-project/smg model_gateway/src/policies/
// cache_aware.rs). It knows nothing of the replicas' caches: its only
// signals are its own approximate tree of what it sent where (sglangTree)
// and its own requests in flight per replica.
//
//   - rule imbalance: when max - min load > balance_abs_threshold and
//     max > balance_rel_threshold × min over the eligible replicas, the least
//     loaded takes the request (sglang_imbalance).
//   - The prompt is matched against the tree. When the deepest matched block
//     covers more than cache_threshold of the prompt, the request follows
//     the match: under rule imbalance to the tenant most recently sent that
//     block, under rule gate to the least loaded of its tenants, which, if
//     its load exceeds both mean + abs and rel × mean, gives way to the least
//     loaded replica (sglang_load_gate). A matched tenant no longer eligible
//     sends the request to the first eligible replica and records nothing
//     (sglang_fallback), as SGLang does.
//   - Otherwise (sglang_cache_miss) the least loaded replica takes it, or
//     with miss smallest_tree the replica holding the fewest tree tokens.
//
// The least loaded is the lowest load, then the fewest requests sent, then
// at random. The choice is then recorded in the tree for the whole prompt.
type sglangCacheAware struct {
	*base
	tree *sglangTree
}

// sglangLoad is the load SGLang's router balances on: its own requests in
// flight to the replica (Worker::load). The one place sglang_cache_aware
// reads load.
func sglangLoad(c *Candidate) float64 {
	inFlight, _, _ := c.own()
	return float64(inFlight)
}

func (p *sglangCacheAware) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	cfg := p.cfg.Baselines.SGLang
	now := p.now(req)
	minL, maxL, sum := math.Inf(1), 0.0, 0.0
	for _, i := range s.elig {
		l := sglangLoad(&cands[i])
		s.load = append(s.load, l)
		minL, maxL, sum = min(minL, l), max(maxL, l), sum+l
	}
	mean := sum / float64(len(s.elig))
	prompt := req.promptTokens()
	bs := req.blockSize()
	m := p.tree.match(req.Hashes)
	ratio := float64(m.blocks*bs) / float64(prompt)
	k, reason, record := -1, ReasonSGLangCacheMiss, true
	switch {
	case cfg.Rule == SGLangRuleImbalance &&
		maxL-minL > float64(cfg.BalanceAbsThreshold) && maxL > cfg.BalanceRelThreshold*minL:
		k, reason = p.leastLoaded(cands, s), ReasonSGLangImbalance
	case ratio > cfg.CacheThreshold:
		reason = ReasonSGLangCacheHit
		if cfg.Rule == SGLangRuleImbalance {
			k = p.mostRecent(cands, s, &m)
		} else {
			k = p.leastLoadedTenant(cands, s, &m)
			if k >= 0 && s.load[k] > mean*cfg.BalanceRelThreshold && s.load[k] > mean+float64(cfg.BalanceAbsThreshold) {
				k, reason = p.leastLoaded(cands, s), ReasonSGLangLoadGate
			}
		}
		if k < 0 {
			k, reason, record = 0, ReasonSGLangFallback, false
		}
	case cfg.Miss == SGLangMissSmallestTree:
		k = p.smallestTree(cands, s)
	default:
		k = p.leastLoaded(cands, s)
	}
	i := int(s.elig[k])
	id := cands[i].key()
	var had int
	if record && !req.DryRun {
		had = p.tree.insert(req.Hashes, id, bs, now)
	} else {
		had = p.tree.held(req.Hashes, id)
	}
	if !req.DryRun {
		p.tree.maybeSweep(now, cfg.EvictionInterval, int64(cfg.MaxTreeSize))
	}
	cached := min(had, (prompt-1)/bs) * bs
	if len(s.elig) == 1 {
		reason = ReasonOnlyCandidate
	}
	return i, Decision{
		Reason:         reason,
		CachedTokens:   cached,
		UncachedTokens: prompt - cached,
		Score:          ratio,
		Eligible:       len(s.elig),
	}, nil
}

// leastLoaded returns the position in s.elig with the lowest load, then the
// fewest requests sent, then at random (SGLang's (load, processed) key; it
// breaks the last tie by index, we at random).
func (p *sglangCacheAware) leastLoaded(cands []Candidate, s *Scratch) int {
	best, ties := -1, 0
	var bestL float64
	var bestN int64
	for k, i := range s.elig {
		_, n := p.tree.stats(cands[i].key())
		l := s.load[k]
		switch {
		case best < 0 || l < bestL || l == bestL && n < bestN:
			best, bestL, bestN, ties = k, l, n, 1
		case l == bestL && n == bestN:
			ties++
			if p.rng.intn(ties) == 0 {
				best = k
			}
		}
	}
	return best
}

// leastLoadedTenant returns the position in s.elig of the least loaded
// eligible tenant of m (ties at random), or -1 when none is eligible.
func (p *sglangCacheAware) leastLoadedTenant(cands []Candidate, s *Scratch, m *treeMatch) int {
	best, ties := -1, 0
	for k, i := range s.elig {
		if !slices.Contains(m.ids[:m.n], cands[i].key()) {
			continue
		}
		switch {
		case best < 0 || s.load[k] < s.load[best]:
			best, ties = k, 1
		case s.load[k] == s.load[best]:
			ties++
			if p.rng.intn(ties) == 0 {
				best = k
			}
		}
	}
	return best
}

// mostRecent returns the position in s.elig of m's most recently sent
// tenant, or -1 when that one is not eligible.
func (p *sglangCacheAware) mostRecent(cands []Candidate, s *Scratch, m *treeMatch) int {
	j := 0
	for k := range m.n {
		if m.last[k] > m.last[j] {
			j = k
		}
	}
	for k, i := range s.elig {
		if cands[i].key() == m.ids[j] {
			return k
		}
	}
	return -1
}

// smallestTree returns the position in s.elig of the replica holding the
// fewest tokens in the tree, ties at random.
func (p *sglangCacheAware) smallestTree(cands []Candidate, s *Scratch) int {
	best, ties := -1, 0
	var bestT int64
	for k, i := range s.elig {
		t, _ := p.tree.stats(cands[i].key())
		switch {
		case best < 0 || t < bestT:
			best, bestT, ties = k, t, 1
		case t == bestT:
			ties++
			if p.rng.intn(ties) == 0 {
				best = k
			}
		}
	}
	return best
}
