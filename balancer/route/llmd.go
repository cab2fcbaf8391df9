package route

import (
	"math"
	"time"
)

// llmD re-implements llm-d's default scheduling profile (docs/baselines.md;
// llm-d/llm-d-inference-scheduler config/charts/epplib/templates/_config.yaml
// and the scorers under pkg/epp/framework/plugins/scheduling): three scorers,
// each in [0,1], summed with their weights, and the max-score picker (random
// among ties).
//
//   - prefix-cache: matched blocks / the prompt's full blocks, with the
//     shared prediction (summaries and overlay) for the match, where llm-d's
//     approximate prefix index records what it routed.
//   - queue: (max − q) / (max − min) over the eligible replicas' waiting
//     queues, 1 for all when they are equal.
//   - kv-cache-utilization: 1 − KV usage.
type llmD struct{ *base }

// llmdLoad returns the waiting queue and KV usage the scorers read: the
// gossiped Load.Waiting and Load.KVUsage when the report is fresh; otherwise
// this balancer's Own.Pending (its requests without a first byte yet) and a
// usage of 0, which is what llm-d's endpoint picker scores a replica it has
// no metrics for. The one place llm_d reads load.
func (p *llmD) llmdLoad(c *Candidate, now time.Time) (waiting, kvUsage float64) {
	if p.loadFresh(c, now) {
		return float64(c.Load.Waiting), min(max(c.Load.KVUsage, 0), 1)
	}
	_, pending, _ := c.own()
	return float64(max(pending, 0)), 0
}

func (p *llmD) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	w := p.cfg.Baselines.LLMD
	now := p.now(req)
	p.fillLoads(cands, s, now) // for predict's stale-summary fallback
	fallback := p.predict(req, cands, s, now)
	bs := req.blockSize()
	blocks := float64(len(req.Hashes))
	minQ, maxQ := math.Inf(1), math.Inf(-1)
	for _, i := range s.elig {
		q, _ := p.llmdLoad(&cands[i], now)
		s.queue = append(s.queue, q)
		minQ, maxQ = min(minQ, q), max(maxQ, q)
	}
	best, ties := 0, 0
	for k, i := range s.elig {
		prefix := 0.0
		if blocks > 0 {
			prefix = float64(s.cached[i]/int32(bs)) / blocks
		}
		queue := 1.0
		if maxQ > minQ {
			queue = (maxQ - s.queue[k]) / (maxQ - minQ)
		}
		_, usage := p.llmdLoad(&cands[i], now)
		score := w.PrefixCacheWeight*prefix + w.QueueWeight*queue + w.KVCacheUtilizationWeight*(1-usage)
		s.score = append(s.score, score)
		switch {
		case k == 0 || score > s.score[best]:
			best, ties = k, 1
		case score == s.score[best]:
			ties++
			if p.rng.intn(ties) == 0 {
				best = k
			}
		}
	}
	reason := ReasonLLMDMaxScore
	return p.scoredPick(req, cands, s, best, reason, fallback, now)
}
