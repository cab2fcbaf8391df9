package route

import (
	"math"
	"time"
)

// dynamoKV re-implements NVIDIA Dynamo's KV router cost (docs/baselines.md;
// ai-dynamo/dynamo lib/kv-router/src/scheduling/selector, DefaultWorkerSelector).
// For every eligible replica, in KV blocks of the request's block size:
//
//	prefill = (pending prefill tokens + prompt tokens) / block size
//	cost    = overlap_score_weight × max(0, prefill − overlap_score_credit × cached blocks)
//	          + decode blocks + (prompt blocks − cached blocks)
//
// which with the default credit of 1 is Dynamo's classic
// overlap_score_weight × potential prefill blocks + potential decode blocks.
// The lowest cost wins, ties at random; with router_temperature T > 0 the
// replica is sampled with probability ∝ exp(−(cost − min) / ((max − min) × T)).
// The cached blocks are the shared prediction (summaries and overlay), where
// Dynamo reads an index of the engines' KV events; see dynamoLoad for the
// load terms.
type dynamoKV struct{ *base }

// dynamoLoad maps Dynamo's per-worker load onto what a candidate carries, in
// tokens and blocks of bs tokens. Dynamo's router tracks, for the requests
// routed to a worker (its own, and other routers' when replicas sync): the
// prompt tokens still to prefill (dropped at the first token) and the KV
// blocks of every active sequence. Ours, from the load model (work):
//
//   - pending prefill tokens: Work.PrefillTokens, this balancer's own
//     pending prefill plus every other origin's share from a fresh report.
//   - active blocks: the reported Load.KVUsage × CapacityBlocks when fresh
//     and the capacity is known (the engine's blocks in use); otherwise
//     Work.InFlight × ceil(cost_model.decode_context_tokens / bs), the cost
//     model's assumed context per request in flight.
//
// The one place dynamo_kv reads load.
func (p *dynamoKV) dynamoLoad(c *Candidate, now time.Time, bs int) (prefillTokens, activeBlocks float64) {
	w := p.work(c, now)
	prefillTokens = float64(max(w.PrefillTokens, 0))
	perRequest := math.Ceil(float64(p.cfg.Cost.DecodeContextTokens) / float64(bs))
	activeBlocks = float64(max(w.InFlight, 0)) * perRequest
	if c.CapacityBlocks > 0 && p.loadFresh(c, now) {
		activeBlocks = min(max(c.Load.KVUsage, 0), 1) * float64(c.CapacityBlocks)
	}
	return prefillTokens, activeBlocks
}

func (p *dynamoKV) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	cfg := p.cfg.Baselines.Dynamo
	now := p.now(req)
	p.fillLoads(cands, s, now) // for predict's stale-summary fallback
	fallback := p.predict(req, cands, s, now)
	prompt := req.promptTokens()
	bs := req.blockSize()
	promptBlocks := math.Ceil(float64(prompt) / float64(bs))
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, i := range s.elig {
		c := &cands[i]
		pending, active := p.dynamoLoad(c, now, bs)
		cached := float64(s.cached[i]) / float64(bs)
		prefill := (pending + float64(prompt)) / float64(bs)
		cost := cfg.OverlapScoreWeight*max(0, prefill-cfg.OverlapScoreCredit*cached) + active + (promptBlocks - cached)
		s.score = append(s.score, cost)
		lo, hi = min(lo, cost), max(hi, cost)
	}
	var k int
	reason := ReasonDynamoLowestCost
	if cfg.RouterTemperature == 0 {
		k = p.lowest(s)
	} else {
		k, reason = p.sample(s, lo, hi, cfg.RouterTemperature), ReasonDynamoSampled
	}
	return p.scoredPick(req, cands, s, k, reason, fallback, now)
}

// lowest returns the position in s.elig of the lowest s.score, ties at
// random.
func (p *dynamoKV) lowest(s *Scratch) int {
	best, ties := 0, 0
	for k, c := range s.score {
		switch {
		case k == 0 || c < s.score[best]:
			best, ties = k, 1
		case c == s.score[best]:
			ties++
			if p.rng.intn(ties) == 0 {
				best = k
			}
		}
	}
	return best
}

// sample draws a position in s.elig with probability ∝
// exp(−(score − lo) / ((hi − lo) × t)); uniform when every score is equal.
func (p *dynamoKV) sample(s *Scratch, lo, hi, t float64) int {
	n := len(s.score)
	if hi == lo || math.IsInf(hi-lo, 0) {
		return p.rng.intn(n)
	}
	scale := 1 / ((hi - lo) * t)
	sum := 0.0
	for _, c := range s.score {
		sum += math.Exp(-(c - lo) * scale)
	}
	u := p.rng.float() * sum
	for k, c := range s.score {
		if u -= math.Exp(-(c - lo) * scale); u < 0 {
			return k
		}
	}
	return n - 1
}
