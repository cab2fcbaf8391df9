package route

import (
	"cmp"
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// costModel picks the eligible candidate with the lowest estimated time to
// first token (see estimator), scaled by the replica's measured correction
// (Candidate.TTFTScale), plus the miss penalty for the prompt tokens it does
// not hold (CostConfig.MissPenalty), among those under the bound on work: a
// candidate whose load would delay this request (queued prefill and decode
// interference, in estimated time) by more than LoadFactor × the weighted mean
// delay, by more than one full engine step and by more than its cache saves
// this request, is skipped (a spill): the miss penalty may keep a prefix at
// home, but not on a replica so loaded that going cold would be faster. A
// candidate whose KV memory cannot hold the request's uncached tokens beside
// what it holds, has queued and will write (base.kvFit) is charged the
// estimated wait for that memory (costModel.kvWait); where no wait can be
// estimated it is skipped while another is known to hold the request (a
// replica whose memory is unknown is charged the least known wait). Among
// the candidates under the bound whose scores are within TieMargin of the
// lowest, those holding most of the prompt are kept, and of the two the
// prefix's rendezvous order ranks first among them the one with fewer
// requests in flight wins: different prompts spread over near-equal
// replicas, so many balancers acting on one view do not all pick alike,
// while one prefix has the same pair on every balancer. When the best
// candidate holds part of the prompt but its estimated queue wait is at least
// HotPrefixQueueWait, the prefix is hot: the request goes to the next best
// candidate whose queue wait is shorter by HotPrefixQueueWait if that is at
// most HotPrefixQueueWait slower, and the overlay then makes it a second
// home for the prefix. A request that opens a conversation (Request.Turn)
// goes so, too, to a candidate whose KV memory is far emptier than the
// best's (roomier): its later turns will find their context there; it may
// be slower by HotPrefixQueueWait times the share of the model's
// conversations that have later turns (turnRate). With Config.ShedDelay
// set, a request is moved off a replica whose work would delay its first
// token by more than that, to the least delayed candidate, and refused
// (ErrOverloaded) when even that one's would. With Config.SLO.TPOT set, a request whose prefill
// would push an answer this balancer streams on its choice past that
// objective goes where it breaks the fewest (costPick.tpotGuard).
type costModel struct {
	*base
	est estimator
	// last is the index of the candidate the last rotation picked
	// (costModel.spread), modulo the candidates; it starts drawn from the
	// seed.
	last atomic.Int64
	// turns counts the model's first and later turns (Pick).
	turns turnRate
}

func (p *costModel) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	now := p.now(req)
	if !req.DryRun && len(req.Exclude) == 0 { // a retry was counted at its first attempt
		p.turns.see(req.Turn)
	}
	p.fillLoads(cands, s, now) // the stale-summary fallback places by requests
	fallback := p.predict(req, cands, s, now)
	key, ok := p.prefixKey(req)
	if !ok {
		key = p.rng.next()
	}
	c := costPick{p: p, cands: cands, s: s, prompt: req.promptTokens()}
	c.score(req, now)
	best, bestT, reason := c.bounded()
	best = c.nearTie(best, bestT, key)
	if s.cached[s.elig[best]] == 0 {
		if turn := p.spread(&c, best, bestT); turn != best {
			best = turn
			if reason == ReasonLowestTTFT { // a spill stays one
				reason = ReasonRotation
			}
		}
	}
	best, reason = c.hotPrefix(req, best, key, reason)
	best, reason = c.tpotGuard(best, reason, now)
	// What every decision shows, a pick or a refusal: every candidate's
	// scores and estimates.
	d := Decision{Eligible: len(s.elig), SummaryFallback: fallback, Cached: s.cached, Scores: candidateScores(s, len(cands), 1e9)}
	d.TTFTs, d.Waits, d.MemoryWaits = p.estimates(cands, s, c.prompt, c.mean)
	if p.cfg.ShedDelay > 0 {
		to, ok := c.admit(best)
		if !ok {
			d.Reason, d.RetryAfter = ReasonShed, c.retryAfter(to)
			return -1, d, ErrOverloaded
		}
		if to != best {
			best, reason = to, ReasonLoadSpill
		}
	}
	if len(s.elig) == 1 {
		reason = ReasonOnlyCandidate
	}
	i := int(s.elig[best])
	d.Reason = reason
	d.CachedTokens, d.UncachedTokens = int(s.cached[i]), c.prompt-int(s.cached[i])
	d.EstimatedTTFT = time.Duration(math.Round(c.estimate(best)))
	d.Score = s.score[best] / 1e9
	p.place(req, cands[i].key(), now)
	return i, d, nil
}

// spread returns the eligible candidate, of those under the bound whose
// scores are within SpreadMargin of bestT, that comes first after the last
// one it returned in the candidates' order, when none of them holds any of
// the prompt; else best. Such a prompt gains nothing from any replica's
// cache, and the estimate cannot rank candidates this close: a replica's
// pending prefills end together, in one engine step, so its queue falls
// from several requests to none at once and the next several requests,
// chosen by the lowest estimate, all go there and into one step again. On
// W6 at round robin's capacity (1,024-token prompts, nothing shared, every
// replica's KV memory full) even the exact pending count as the score lost
// to round robin (TTFT p50 1,010 against 767 ms, docs/routing-findings.md); taken in
// turn, arrivals reach each replica about evenly spaced, as under round
// robin, while a replica whose queue is far longer than the others' is out
// of the margin and skipped. The order is this balancer's own and starts at
// a candidate drawn from its seed (New), so many balancers rotate
// independently and their first picks do not herd.
func (p *costModel) spread(c *costPick, best int, bestT float64) int {
	margin := p.cfg.SpreadMargin
	if margin <= 0 {
		return best
	}
	margin = max(margin*bestT, p.est.t0)
	s := c.s
	n := len(c.cands)
	last := int(p.last.Load() % int64(n))
	pick, ahead := -1, n
	for k, i := range s.elig {
		if s.score[k] > bestT+margin || !c.under(k) {
			continue
		}
		if s.cached[i] > 0 {
			return best
		}
		if d := (int(i) - last - 1 + 2*n) % n; d < ahead {
			pick, ahead = k, d
		}
	}
	if pick < 0 {
		return best
	}
	p.last.Store(int64(s.elig[pick]))
	return pick
}

// roomier reports whether eligible candidate k has far more room for a new
// conversation than candidate than (roomier), by the memory in use (occ) or
// by the memory holding contexts (fill). In use alone, a replica that holds
// nothing looks no roomier than those whose memory is full of cached
// contexts but whose running requests take as much: W3 at 4 sessions/s
// left one replica without a conversation for a whole run while the other
// three evicted live contexts (docs/bench-findings.md), and so would a replica that
// just joined the fleet.
func (s *Scratch) roomier(k, than int) bool {
	return roomier(s.occ[k], s.occ[than]) || roomier(s.fill[k], s.fill[than])
}

// roomier reports whether a replica whose KV memory would be the share occ
// full after a request has far more room for a new conversation than a
// replica at the share than: at least twice the free share, and a quarter
// of the capacity more. (Both: twice alone moves between near-full replicas
// on a few blocks, a quarter alone between half-empty ones.) A negative occ
// is unknown.
func roomier(occ, than float64) bool {
	return occ >= 0 && 1-occ >= 2*(1-than) && than-occ >= 0.25
}

// kvWait estimates, in ns, what a request loses waiting for KV memory on a
// replica it is short of (room, for the work w there): 0 when it fits or
// nothing is known, +Inf when no estimate can be made (no fresh report, or
// nothing in flight whose end would free memory), which makes the bound
// skip the replica while another has room. ends are this balancer's
// followed answers there and ran the share of its answers that ran to
// their max_tokens (Counters.appendEnds); s holds scratch space.
//
// The engine frees memory as its requests finish. With n requests in
// flight, each frees its share of the blocks in use (used/n) and of the
// reserve for the output (what the shortfall counts it may still write)
// when it ends, and is taken to end at a uniformly spread moment of the
// steps that reserve takes to write (releaseSteps). Without a followed
// answer every reserve is R̄ = w.OutputReserve / n: requests end at about
// n/R̄ a step, and the shortfall
// needs k = ⌈deficit / (used/n + R̄)⌉ of them to end: k·R̄/n steps, each the
// length of a step of the decodes alone (what is queued there waits for
// the same memory). A few long requests holding the memory make a long wait
// (one of 4 requests writing 256 more ends every 64 steps), many short
// ones a short wait (one of 62 writing 64 more ends every step). k = n is
// R̄ steps, all in flight ending; a larger shortfall (prefills queued there
// need the memory first) waits as many more steps as the same rate takes
// to free it, for the requests admitted as the first ones end free theirs
// in turn. (It was +Inf beyond n: under overload every replica passed that
// point, and the ones that did were charged no wait at all.) A followed
// answer ends by what its max_tokens leaves for certain, and at it as
// often as answers run to their bound: a replica whose answers are near
// their ends frees its memory sooner than one whose answers have just
// begun, which the mean alone does not show (W2 at round robin's capacity:
// docs/routing-findings.md). Its reserve stays whole in the shortfall, as
// the bound counts it: taking what an answer has written off its reserve
// let a replica near full look as if it fitted (the Mooncake trace at round
// robin's capacity: one request waited 1.1 s for memory where none was
// estimated).
//
// The request's own prefill is not charged again for a preemption. vLLM
// V1 preempts the newest running sequence when a decode needs a block and
// none is free, but the shortfall is counted against a bound (every request
// writing its whole reserve while none ends), which a replica near full
// passes on most requests and the engine's memory on few: on W6 at round
// robin's capacity every replica was short by the bound in half the picks
// while the engines preempted one request in 100-300 in most runs.
// Charged a whole prefill, a replica short by a block scored a prefill
// worse than one that fitted by a block, a step in the score no real
// difference stood behind,
// and the rotation among near-equal cold replicas (spread) broke on it:
// arrivals went in bursts to whichever report showed a block to spare
// (runs of up to 54 requests to one replica, 170 preemptions and a TTFT
// p50 of 1.1 s in one run where round robin had 45 and 142 ms,
// docs/routing.md).
//
// Before this estimate the bound skipped every short replica while one had
// room, which in a memory-bound regime (W6 at 1x: 1,024-token prompts,
// 64-token answers, every replica near full) sent runs of up to 26
// requests to the one with room, a queue of prefills far longer than the
// wait for a full replica to free a request's blocks (docs/routing-findings.md).
func (p *costModel) kvWait(room kvRoom, w Work, ends []answerEnd, ran float64, s *Scratch) float64 {
	if room.state != kvShort {
		return 0
	}
	n := w.InFlight
	if room.used <= 0 || n <= 0 || w.OutputReserve <= 0 {
		return math.Inf(1)
	}
	steps, buf := releaseSteps(room.deficit, room.used/float64(n), n, float64(w.OutputReserve), ends, ran, s.memEnds)
	s.memEnds = buf
	decodes := w.Decodes()
	return steps * p.est.step(float64(decodes), decodes)
}

// memEnd is a moment at which a replica's memory frees faster or slower
// (releaseSteps): at step at, the rate changes by rate and jump tokens free
// at once.
type memEnd struct{ at, rate, jump float64 }

// releaseSteps returns the engine steps until the n requests in flight on a
// replica have freed deficit tokens of KV memory, rounded up to whole
// requests of the mean size. Each request frees its share of the blocks in
// use (used) and the output reserve the deficit counts for it (R_i) when it
// ends. A request whose progress is not seen ends at a uniformly spread
// moment of the R_i steps its reserve takes to write, R_i the mean of the
// reserve not held by the followed answers (ends, each with a reserve). A
// followed answer ends by its bound b_i (what its max_tokens leaves) for
// certain: with the share ran of answers that run to their bound, at it;
// otherwise at a uniformly spread moment of its R_i steps, or at b_i if that
// comes first. Memory thus
// frees at a rate that falls as requests end, with a jump at each bound;
// past the end of all in flight it goes on freeing at the mean rate,
// n(used+R̄)/R̄ a step with R̄ = reserve/n, as the requests admitted
// meanwhile end. With no answer followed it is k·R̄/n steps for
// k = ⌈deficit/(used+R̄)⌉ (costModel.kvWait). buf is scratch space for the
// moments; it returns it, grown.
func releaseSteps(deficit, used float64, n int, reserve float64, ends []answerEnd, ran float64, buf []memEnd) (float64, []memEnd) {
	rbar := reserve / float64(n)
	need := math.Ceil(deficit/(used+rbar)) * (used + rbar)
	// freed is the memory freed by step s, rate how fast it frees then,
	// and total what all in flight free.
	freed, rate, total := 0.0, 0.0, 0.0
	buf = buf[:0]
	followed := 0.0
	for _, e := range ends {
		size := used + e.reserve
		total += size
		followed += e.reserve
		switch {
		case e.bound <= 0:
			freed += size
		default: // e.reserve > 0: appendEnds leaves out answers without one
			r := (1 - ran) * size / e.reserve
			rate += r
			if e.reserve < e.bound {
				buf = append(buf, memEnd{at: e.reserve, rate: -r}, memEnd{at: e.bound, jump: ran * size})
			} else {
				buf = append(buf, memEnd{at: e.bound, rate: -r, jump: size - r*e.bound})
			}
		}
	}
	if others := float64(n - len(ends)); others > 0 {
		rest := max(reserve-followed, 0) / others
		size := others * (used + rest)
		total += size
		if rest <= 0 {
			freed += size
		} else {
			rate += size / rest
			buf = append(buf, memEnd{at: rest, rate: -size / rest})
		}
	}
	if freed >= need {
		return 0, buf
	}
	slices.SortFunc(buf, func(a, b memEnd) int { return cmp.Compare(a.at, b.at) })
	s := 0.0
	for _, e := range buf {
		if rate > 0 && freed+rate*(e.at-s) >= need {
			return s + (need-freed)/rate, buf
		}
		freed += rate*(e.at-s) + e.jump
		s = e.at
		rate = max(rate+e.rate, 0)
		if freed >= need {
			return s, buf
		}
	}
	return s + (need-freed)*max(rbar, 1)/total, buf
}

// estimate returns the estimated TTFT of eligible candidate k: its score
// without the miss penalty.
func (p *costModel) estimate(cands []Candidate, s *Scratch, k, prompt int, mean float64) float64 {
	cached := int(s.cached[s.elig[k]])
	return s.score[k] - p.est.penalty(prompt-cached, cached)*cands[s.elig[k]].ttftScale(mean)
}

// estimates returns every candidate's estimated TTFT, queue wait and wait
// for memory, in s.ttfts, s.waits and s.mems (-1 where not eligible).
func (p *costModel) estimates(cands []Candidate, s *Scratch, prompt int, mean float64) (ttfts, waits, mems []time.Duration) {
	s.ttfts, s.waits, s.mems = grow(s.ttfts, len(cands)), grow(s.waits, len(cands)), grow(s.mems, len(cands))
	for i := range s.ttfts {
		s.ttfts[i], s.waits[i], s.mems[i] = -1, -1, -1
	}
	for k, i := range s.elig {
		s.ttfts[i] = time.Duration(math.Round(p.estimate(cands, s, k, prompt, mean)))
		s.waits[i] = time.Duration(math.Round(s.queue[k]))
		if m := s.kvWait[k]; math.IsInf(m, 1) {
			s.mems[i] = MemoryShort
		} else {
			s.mems[i] = time.Duration(math.Round(m))
		}
	}
	return s.ttfts, s.waits, s.mems
}
