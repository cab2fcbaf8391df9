package route

// commonCached returns, for each eligible candidate k, the most prompt
// tokens any other eligible candidate is predicted to hold (s.cached): the
// part of the prompt that is no candidate's own. It fills s.common.
func (s *Scratch) commonCached() []int32 {
	s.common = grow(s.common, len(s.elig))
	top, second, at := int32(0), int32(0), -1
	for k, i := range s.elig {
		switch c := max(s.cached[i], 0); {
		case c > top:
			second, top, at = top, c, k
		case c > second:
			second = c
		}
	}
	for k := range s.elig {
		s.common[k] = top
		if k == at {
			s.common[k] = second
		}
	}
	return s.common
}

// admitted returns what of cached, the prompt tokens candidate c is predicted
// to hold, is still there when the engine admits the request behind the work
// w (q of it queued prefill, running decodes), given common, the tokens of
// the prompt other candidates hold too.
//
// An engine looks a request's prefix up when it schedules it, not when it
// arrives (vLLM V1's scheduler, SGLang's radix cache alike), and a cached
// block no running request holds is free memory: the work admitted ahead of
// the request takes free blocks first, and when it needs more than are free
// the least recently used cached ones are evicted. What the work ahead
// allocates is its queued uncached prefill and a token a step for every
// running decode while that prefill goes through; what is free is the
// capacity less the blocks in use by a fresh report. The tokens only this
// candidate holds (cached beyond common) are taken to be a conversation's
// context, as recently used as any: the part of it in no running request's
// blocks, at most the free memory (a cached block nobody holds counts as
// free), is evicted last, once the work ahead has taken every other free
// block, and from its end (vLLM frees a request's blocks tail first); the
// rest is held and stays. Tokens other candidates hold as well are a shared
// prefix, which requests in flight keep in use or which is cached alike
// everywhere; they stay.
//
// Measured on W3 at round robin's capacity (agent loops of 10 steps, every
// replica's memory near full; docs/routing-findings.md, "Evicted before
// admission"): with the prefix predicted whole, a request that waited 500 ms
// or more at the engine found less of its prompt cached than predicted 37
// times in 100 (one that waited under 10 ms 2 to 5), each missing about
// 2,200 tokens, and its TTFT was twice the others'. Predicted at admission,
// 2 to 7 in 100 did, and TTFT p99 fell on each of five seeds (1,303 to 1,166
// ms on average).
func (p *costModel) admitted(c *Candidate, w Work, q queue, running, cached, common, bs int) int {
	own := cached - common
	if own <= 0 || c.CapacityBlocks <= 0 || !c.Load.Known || c.Load.Stale {
		return cached
	}
	if c.BlockSize > 0 {
		bs = c.BlockSize
	}
	capacity := float64(c.CapacityBlocks) * float64(bs)
	free := capacity - min(max(c.Load.KVUsage, 0), 1)*capacity
	per := float64(max(p.est.budget-running, 1))
	steps := float64(int((q.tokens + per - 1) / per))
	if q.left > 0 {
		steps++
	}
	ahead := float64(max(w.PrefillTokens, 0)) + float64(running)*steps
	// At most free of the tokens only it holds are in no running request's
	// blocks (the rest are held, so they stay); those are evicted as the
	// work ahead outgrows the free blocks older than them.
	loose := min(float64(own), free)
	lost := min(loose, max(ahead-(free-loose), 0))
	if lost <= 0 {
		return cached
	}
	return common + max(int(float64(own)-lost), 0)/bs*bs
}
