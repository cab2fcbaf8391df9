package enginesim

import (
	"slices"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// stepPlan is what one step computes, decided at its start.
type stepPlan struct {
	start, end time.Time
	epoch      uint64
	items      []stepItem
	prefills   []PrefillChunk
	decodes    []int
	tokens     int // tokens scheduled in the step
	preempted  int // sequences preempted while scheduling it
}

// stepItem is one sequence's share of a step: n tokens computed.
type stepItem struct {
	s      *seq
	n      int
	decode bool
}

// schedule builds the next step at virtual time start, following vLLM V1's
// Scheduler.schedule: running sequences first, in order (a decode gets one
// token, a partial prefill the rest of its prompt up to the budget),
// preempting from the tail of the running queue when KV runs out; then, if
// nothing was preempted, waiting sequences FIFO while the token budget and
// MaxNumSeqs allow. KV blocks are allocated and newly full blocks cached
// here, as vLLM does at schedule time.
func (e *Engine) schedule(start time.Time) *stepPlan {
	e.promote(start)
	p := &stepPlan{start: start, epoch: e.epoch}
	budget := e.cfg.MaxNumBatchedTokens

	for i := 0; i < len(e.running) && budget > 0; {
		s := e.running[i]
		n := min(s.numTokens()-s.computed, budget)
		if n <= 0 {
			i++
			continue
		}
		ok := true
		for !e.allocSlots(s, n, nil) {
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			p.preempted++
			if victim == s {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		p.add(s, n)
		budget -= n
		i++
	}

	if p.preempted == 0 {
		bs := e.cfg.BlockSize
		for len(e.waiting) > 0 && budget > 0 && len(e.running) < e.cfg.MaxNumSeqs {
			s := e.waiting[0]
			hit := e.lookupPrefix(s)
			hitTokens := len(hit) * bs
			n := min(s.numTokens()-hitTokens, budget)
			s.computed = hitTokens
			if !e.allocSlots(s, n, hit) {
				s.computed = 0
				break
			}
			e.waiting[0] = nil
			e.waiting = e.waiting[1:]
			e.running = append(e.running, s)
			s.state = seqRunning
			if s.cachedTokens < 0 {
				s.cachedTokens = hitTokens
				s.firstSched = start
				e.m.admitted(s.numTokens(), hitTokens)
			}
			p.add(s, n)
			budget -= n
		}
	}

	for _, it := range p.items {
		it.s.computed += it.n
	}
	if p.preempted > 0 {
		e.m.preempted(p.preempted)
	}
	return p
}

// add records n tokens of s in the step and its cost-model inputs.
func (p *stepPlan) add(s *seq, n int) {
	decode := s.decoding && n == 1 && s.computed+1 == s.numTokens()
	p.items = append(p.items, stepItem{s: s, n: n, decode: decode})
	p.tokens += n
	if decode {
		p.decodes = append(p.decodes, s.numTokens())
	} else {
		p.prefills = append(p.prefills, PrefillChunk{New: n, Cached: s.computed})
	}
}

// promote moves pending sequences whose RequestOverhead has passed by now to
// the tail of the waiting queue, in readiness order.
func (e *Engine) promote(now time.Time) {
	i := 0
	for i < len(e.pending) && !e.pending[i].readyAt.After(now) {
		s := e.pending[i]
		s.state = seqWaiting
		e.waiting = append(e.waiting, s)
		i++
	}
	if i > 0 {
		clear(e.pending[:i])
		e.pending = e.pending[i:]
	}
}

// lookupPrefix returns the cached blocks of s's longest cached prefix,
// capped so that the last token is always computed (vLLM's
// max_cache_hit_length = num_tokens - 1).
func (e *Engine) lookupPrefix(s *seq) []int32 {
	maxBlocks := (s.numTokens() - 1) / e.cfg.BlockSize
	var hit []int32
	for i := 0; i < maxBlocks && i < len(s.hashes); i++ {
		id, ok := e.pool.lookup(s.hashes[i])
		if !ok {
			break
		}
		hit = append(hit, id)
	}
	return hit
}

// allocSlots is vLLM's KVCacheManager.allocate_slots: it makes s hold blocks
// for s.computed+n tokens (taking the prefix-hit blocks first, for a
// sequence being admitted) and caches every block that becomes full. It
// reports false, changing nothing, when the free queue is too short.
func (e *Engine) allocSlots(s *seq, n int, hit []int32) bool {
	bs := e.cfg.BlockSize
	total := s.computed + n
	need := max(0, (total+bs-1)/bs-len(s.blocks)-len(hit))
	if need > e.pool.numFree()-e.pool.evictable(hit) {
		return false
	}
	if len(hit) > 0 {
		e.pool.touch(hit)
		s.blocks = append(s.blocks, hit...)
		s.numCachedBlocks = len(hit)
	}
	s.blocks = e.pool.allocate(s.blocks, need)

	numFull := min(total, s.numTokens()) / bs
	if numFull > s.numCachedBlocks {
		c := s.numCachedBlocks
		var parent *kvblock.Hash
		if c > 0 {
			parent = &s.hashes[c-1]
		}
		e.pool.cache(s.blocks[c:numFull], s.hashes[c:numFull], parent,
			s.tokens[c*bs:numFull*bs:numFull*bs], s.req.LoRA)
		s.numCachedBlocks = numFull
	}
	return true
}

// releaseBlocks frees s's blocks tail first, so the tail of a prefix is
// evicted before its head.
func (e *Engine) releaseBlocks(s *seq) {
	slices.Reverse(s.blocks)
	e.pool.free(s.blocks)
	s.blocks = s.blocks[:0]
	s.numCachedBlocks = 0
}

// preempt frees a running sequence for recomputation and puts it at the
// front of the waiting queue.
func (e *Engine) preempt(s *seq) {
	e.releaseBlocks(s)
	s.computed = 0
	s.decoding = false
	s.preemptions++
	s.state = seqWaiting
	e.waiting = slices.Insert(e.waiting, 0, s)
}
