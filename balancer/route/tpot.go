package route

import (
	"math"
	"time"
)

// tpotGuard moves a request off the choice best when its prefill would
// push one of this balancer's answers streaming there past the TPOT
// objective (SLOConfig.TPOT), to the candidate under the bound that breaks
// the fewest, the lowest score among those, whose estimated TTFT stays
// within the TTFT objective or best's own estimate, whichever is later
// (ReasonTPOTGuard). Else it returns best and reason unchanged.
//
// An answer's TPOT is the mean gap between its tokens: an answer of m
// tokens has m-1 gaps, and a prefill of thousands of tokens that shares an
// engine step with it lengthens one gap by a whole step of prefill (175 ms
// for 8,192 tokens on the 8B/H100 model), which breaks a 100 ms objective
// for an answer of three tokens and moves that of one of 300 by half a
// millisecond. The TTFT estimate does not count it: the replica that has
// just taken a short answer looks the idlest to a long prompt that comes
// next (the Mooncake tool-and-agent trace, docs/bench-findings.md).
func (c *costPick) tpotGuard(best int, reason Reason, now time.Time) (int, Reason) {
	slo := c.p.cfg.SLO
	if slo.TPOT <= 0 {
		return best, reason
	}
	worst := c.breaks(best, now)
	if worst == 0 {
		return best, reason
	}
	abs := c.absolute()
	limit := max(float64(slo.TTFT), c.estimate(best)*abs)
	if slo.TTFT <= 0 {
		limit = math.Inf(1)
	}
	pick, fewest := best, worst
	s := c.s
	for k := range s.elig {
		if k == best || !c.under(k) || c.estimate(k)*abs > limit {
			continue
		}
		// Only fewer breaks move it: among equals the earlier rules'
		// choice (a rotation's turn, a near tie's, a second home) stands.
		b := c.breaks(k, now)
		if b < fewest || (b == fewest && pick != best && s.score[k] < s.score[pick]) {
			pick, fewest = k, b
		}
	}
	if pick == best {
		return best, reason
	}
	return pick, ReasonTPOTGuard
}

// breaks returns how many of this balancer's answers on eligible candidate k
// the request's prefill there would newly push past the TPOT objective: an
// answer within it without the prefill, past it with.
//
// The engine runs each step's decodes first, one token each, and fills the
// rest of its token budget (B-R with R decoding) with prefill chunks in
// arrival order. So the Q prompt tokens queued there go first, through the
// answer's next ⌈Q/(B-R)⌉ gaps, and this prompt's n uncached tokens then
// through up to ⌈n/(B-R)⌉ more: each such gap is a step of prefill rather
// than of decodes alone. An answer still prefilling is taken to start
// decoding as the queue ahead of this prompt ends (it is the newest there,
// the worst case), an answer decoding to have a token left for every gap
// not seen yet (its bound: answers end at their max_tokens or earlier).
func (c *costPick) breaks(k int, now time.Time) int {
	cand := &c.cands[c.s.elig[k]]
	if cand.Own == nil {
		return 0
	}
	p := c.p
	q, running := c.s.ahead[k], c.s.decodes[k] // as score estimated them
	per := float64(max(p.est.budget-running, 1))
	decode := p.est.step(float64(running), running)
	cached := int(c.s.cached[c.s.elig[k]])
	n := float64(c.prompt - cached)
	if n <= 0 {
		return 0
	}
	queued := max(q.tokens, 0)
	queueSteps := math.Ceil(queued / per)
	if q.left > 0 {
		queueSteps++
	}
	ownSteps := math.Ceil(n / per)
	attention := p.est.att * n * (float64(cached) + n/2)
	// extra is the time the first steps of a prefill of tokens add to an
	// answer's next gaps beyond those steps run with decodes alone.
	extra := func(tokens, gaps float64) float64 {
		tokens = min(tokens, gaps*per)
		if tokens <= 0 {
			return 0
		}
		return p.est.prefill(tokens, running) - math.Ceil(tokens/per)*decode
	}
	tpot := float64(p.cfg.SLO.TPOT)
	broken := 0
	cand.Own.eachAnswer(func(a answerState) {
		gaps := float64(a.out - 1)
		budget := tpot * gaps
		left, elapsed, ahead := gaps, 0.0, 0.0
		if !a.first.IsZero() {
			left = float64(a.out - a.tokens)
			elapsed = float64(now.Sub(a.first))
			ahead = queueSteps
		}
		if left <= 0 {
			return
		}
		without := elapsed + left*decode
		if ahead > 0 {
			without += q.left + extra(queued, min(ahead, left))
		}
		hit := min(left-ahead, ownSteps)
		if hit <= 0 || without > budget {
			return // done before this prefill starts, or late already
		}
		with := without + extra(n, hit) + attention*min(hit*per/n, 1)
		if with > budget {
			broken++
		}
	})
	return broken
}
