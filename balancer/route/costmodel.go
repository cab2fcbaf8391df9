package route

import (
	"math"
	"time"
)

// costModel picks the eligible candidate with the lowest estimated time to
// first token (see estimator) plus the miss penalty for the prompt tokens it
// does not hold (CostConfig.MissPenalty), among those under the bounded-load
// cap (a spill when the overall best is above it). When the best candidate holds
// part of the prompt but its estimated queue wait is at least
// HotPrefixQueueWait, the prefix is hot: the request goes to the next best
// candidate if that is at most HotPrefixQueueWait slower, and the overlay
// then makes it a second home for the prefix. Ties go to the prefix's
// rendezvous order, so balancers break them alike.
type costModel struct {
	*base
	est estimator
}

func (p *costModel) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	now := p.now(req)
	p.fillLoads(cands, s, now)
	fallback := p.predict(req, cands, s, now)
	prompt := req.promptTokens()
	total, weights := p.bound(cands, s)
	key, ok := p.prefixKey(req)
	if !ok {
		key = p.rng.next()
	}
	best, all := -1, -1
	bestT, allT, bestR, allR := math.Inf(1), math.Inf(1), 0.0, 0.0
	for k, i := range s.elig {
		c := &cands[i]
		queued, running := p.queueOf(c, now)
		cached := int(s.cached[i])
		t, wait := p.est.ttft(queued, running, prompt-cached, cached)
		t += p.est.penalty(prompt-cached, cached)
		s.score = append(s.score, t)
		s.queue = append(s.queue, wait)
		if t > bestT {
			continue
		}
		r := rendezvous(key, c.key(), 1, true)
		if t < allT || t == allT && r > allR {
			all, allT, allR = k, t, r
		}
		if (t < bestT || t == bestT && r > bestR) && p.underBound(cands, s, k, total, weights) {
			best, bestT, bestR = k, t, r
		}
	}
	if best < 0 { // unreachable: some candidate is always under the bound
		best = all
	}
	reason := ReasonLowestTTFT
	if best != all {
		reason = ReasonLoadSpill
	}
	if hot := float64(p.cfg.Cost.HotPrefixQueueWait); hot > 0 && s.cached[s.elig[best]] > 0 && s.queue[best] >= hot {
		// Replication is deliberate: compare estimated TTFTs, without the
		// miss penalty that keeps prefixes at home.
		next, nextT, nextR := -1, p.estimate(s, best, prompt)+hot, 0.0
		for k, i := range s.elig {
			t := p.estimate(s, k, prompt)
			if k == best || t > nextT || !p.underBound(cands, s, k, total, weights) {
				continue
			}
			if r := rendezvous(key, cands[i].key(), 1, true); next < 0 || t < nextT || r > nextR {
				next, nextT, nextR = k, t, r
			}
		}
		if next >= 0 {
			best, reason = next, ReasonHotPrefix
		}
	}
	if len(s.elig) == 1 {
		reason = ReasonOnlyCandidate
	}
	i := int(s.elig[best])
	d := Decision{
		Reason:          reason,
		CachedTokens:    int(s.cached[i]),
		UncachedTokens:  prompt - int(s.cached[i]),
		EstimatedTTFT:   time.Duration(math.Round(p.estimate(s, best, prompt))),
		Score:           s.score[best] / 1e9,
		Eligible:        len(s.elig),
		SummaryFallback: fallback,
		Cached:          s.cached,
		Scores:          candidateScores(s, len(cands), 1e9),
	}
	if p.overlay != nil {
		p.overlay.record(req.Hashes, cands[i].key(), now)
	}
	return i, d, nil
}

// estimate returns the estimated TTFT of eligible candidate k: its score
// without the miss penalty.
func (p *costModel) estimate(s *Scratch, k, prompt int) float64 {
	cached := int(s.cached[s.elig[k]])
	return s.score[k] - p.est.penalty(prompt-cached, cached)
}

// queueOf returns the uncached prompt tokens queued ahead on c and its
// running (decoding) requests: from the gossiped load when fresh, never below
// what this balancer alone has sent there; from the balancer's own counts
// when the report is stale.
func (p *costModel) queueOf(c *Candidate, now time.Time) (queued float64, running int) {
	inFlight, pending, tokens := c.own()
	queued = float64(max(tokens, 0))
	running = int(max(inFlight-pending, 0))
	if p.loadFresh(c, now) {
		l := &c.Load
		q := float64(l.Waiting) * p.est.queuedPrompt
		if l.HasWaitingPrefillTokens {
			q = float64(l.WaitingPrefillTokens)
		}
		queued = max(queued, q)
		running = max(running, l.Running)
	}
	return queued, running
}
