package route

import "math"

// kvAware scores each eligible candidate in [0,1] as the weighted mean of
// three scorers, each in [0,1] (the llm-d scorer shape): the predicted hit
// ratio (cached / prompt tokens), the relative load (1 for the least loaded
// per weight, 0 for the most) and the free KV cache (1 - usage, 0.5 when the
// load report is stale). The highest score wins; ties go to the prefix's
// rendezvous order, so balancers break them alike.
type kvAware struct{ *base }

func (p *kvAware) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	now := p.now(req)
	p.fillLoads(cands, s, now)
	fallback := p.predict(req, cands, s, now)
	prompt := float64(req.promptTokens())
	minL, maxL := math.Inf(1), math.Inf(-1)
	for k, i := range s.elig {
		l := s.load[k] / cands[i].weight()
		minL, maxL = min(minL, l), max(maxL, l)
	}
	w := p.cfg.KVAware
	wsum := w.PrefixWeight + w.LoadWeight + w.KVUsageWeight
	key, ok := p.prefixKey(req)
	if !ok {
		key = p.rng.next()
	}
	best, bestS, bestR := -1, math.Inf(-1), math.Inf(-1)
	for k, i := range s.elig {
		c := &cands[i]
		hit := float64(s.cached[i]) / prompt
		ls := 1.0
		if maxL > minL {
			ls = (maxL - s.load[k]/c.weight()) / (maxL - minL)
		}
		kv := 0.5
		if p.loadFresh(c, now) {
			kv = 1 - min(max(c.Load.KVUsage, 0), 1)
		}
		score := (w.PrefixWeight*hit + w.LoadWeight*ls + w.KVUsageWeight*kv) / wsum
		s.score = append(s.score, score)
		if score < bestS {
			continue
		}
		r := rendezvous(key, c.key(), 1, true)
		if score > bestS || r > bestR {
			best, bestS, bestR = k, score, r
		}
	}
	i := int(s.elig[best])
	d := Decision{
		Reason:          ReasonBestScore,
		CachedTokens:    int(s.cached[i]),
		UncachedTokens:  req.promptTokens() - int(s.cached[i]),
		Score:           bestS,
		Eligible:        len(s.elig),
		SummaryFallback: fallback,
		Cached:          s.cached,
		Scores:          candidateScores(s, len(cands), 1),
	}
	if len(s.elig) == 1 {
		d.Reason = ReasonOnlyCandidate
	}
	if p.overlay != nil {
		p.overlay.place(req, cands[i].key(), now)
	}
	return i, d, nil
}
