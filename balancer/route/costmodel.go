package route

import (
	"math"
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
// home for the prefix. A request that opens a
// conversation (Request.OpensConversation) goes so, too, to a candidate whose
// KV memory is far emptier than the best's (roomier): its later turns
// will find their context there. With Config.ShedDelay set, a request is
// moved off a replica whose work would delay its first token by more than
// that, to the least delayed candidate, and refused (ErrOverloaded) when
// even that one's would.
type costModel struct {
	*base
	est estimator
	// last is the index of the candidate the last rotation picked
	// (costModel.spread), modulo the candidates; it starts drawn from the
	// seed.
	last atomic.Int64
}

func (p *costModel) Pick(req *Request, cands []Candidate, s *Scratch) (int, Decision, error) {
	if s == nil {
		s = &Scratch{}
	}
	if err := filter(req, cands, s); err != nil {
		return -1, Decision{}, err
	}
	now := p.now(req)
	p.fillLoads(cands, s, now) // the stale-summary fallback places by requests
	fallback := p.predict(req, cands, s, now)
	prompt := req.promptTokens()
	key, ok := p.prefixKey(req)
	if !ok {
		key = p.rng.next()
	}
	// Score every eligible candidate; s.delay holds the delay its load adds,
	// and s.load (no longer needed for the fallback) what its cache saves.
	s.delay = s.delay[:0]
	totalDelay, weights := 0.0, 0.0
	cold, _ := p.est.ttft(queue{}, 0, prompt, 0)
	s.load = s.load[:0]
	s.kvWait = s.kvWait[:0]
	s.flight = s.flight[:0]
	s.occ = s.occ[:0]
	s.fill = s.fill[:0]
	fits, unknown, known := 0, 0, math.Inf(1) // known: the least wait for memory known
	worst := 0.0                              // the longest wait for memory known
	mean := meanTTFTScale(cands, s.elig)
	bs := req.blockSize()
	for _, i := range s.elig {
		c := &cands[i]
		w := p.work(c, now)
		cached := int(s.cached[i])
		kv := p.kvFit(c, w, now, prompt-cached, req.OutputTokens, bs)
		scale := c.ttftScale(mean)
		kvWait := p.kvWait(kv, w) * scale
		switch kv.state {
		case kvFits:
			fits++
			known = 0
		case kvShort:
			known = min(known, kvWait)
			if !math.IsInf(kvWait, 1) {
				worst = max(worst, kvWait)
			}
		case kvUnknown:
			kvWait = -1 // charged the least known wait, below
			unknown++
		}
		s.kvWait = append(s.kvWait, kvWait)
		occ := -1.0
		if kv.known {
			occ = kv.occ
		}
		s.occ = append(s.occ, occ)
		s.fill = append(s.fill, kv.fill)
		t, wait := p.est.ttft(p.est.queueOf(w, now), w.Decodes(), prompt-cached, cached)
		idle, _ := p.est.ttft(queue{}, 0, prompt-cached, cached)
		mem := 0.0 // the wait for memory: delay, not a queue of prefill (wait)
		if kvWait > 0 && !math.IsInf(kvWait, 1) {
			mem = kvWait
		}
		delay := max(t-idle, 0)*scale + mem
		s.score = append(s.score, (t+p.est.penalty(prompt-cached, cached))*scale+mem)
		s.queue = append(s.queue, wait*scale)
		s.delay = append(s.delay, delay)
		s.load = append(s.load, max(cold-idle, 0)*scale)
		s.flight = append(s.flight, float64(w.InFlight)/c.weight())
		totalDelay += delay
		weights += c.weight()
	}
	if unknown > 0 {
		// A replica whose memory is unknown (no fresh report, or no capacity
		// known) is taken to wait as long as the best known one: neither
		// the place the others' shortage sends requests to, nor turned away.
		if math.IsInf(known, 1) {
			known = 0
		}
		for k := range s.elig {
			if s.kvWait[k] < 0 {
				s.kvWait[k] = known
				s.score[k] += known
				s.delay[k] += known
				totalDelay += known
			}
		}
	}
	short := func(k int) bool { return math.IsInf(s.kvWait[k], 1) }
	shortCharge := 0.0 // what a short replica without an estimate is charged
	if fits == 0 && worst > 0 {
		shortCharge = worst
		// Every replica is short of memory. One whose wait cannot be
		// estimated is charged the longest estimated one, not nothing: with
		// nothing charged it drew every request while the others' waits
		// were counted (W6 at 135/s: runs of 91 requests to one replica).
		for k := range s.elig {
			if short(k) {
				s.score[k] += shortCharge
				s.delay[k] += shortCharge
				totalDelay += shortCharge
			}
		}
	}
	minBound := p.est.step(float64(p.est.budget), 0)
	under := func(k int) bool {
		if short(k) && fits > 0 {
			return false
		}
		return s.delay[k] <= max(p.cfg.LoadFactor*totalDelay/weights*cands[s.elig[k]].weight(), minBound, s.load[k])
	}
	// all is the best by score with no wait for memory counted: the
	// choice, were every replica's memory unbounded.
	best, all := -1, -1
	bestT, allT := math.Inf(1), math.Inf(1)
	for k := range s.elig {
		t := s.score[k]
		a := t - shortCharge
		if !short(k) {
			a = t - s.kvWait[k]
		}
		if a < allT {
			all, allT = k, a
		}
		if t < bestT && under(k) {
			best, bestT = k, t
		}
	}
	if best < 0 { // every candidate not short of KV is over the bound on work
		for k := range s.elig {
			if t := s.score[k]; !short(k) && (best < 0 || t < bestT) {
				best, bestT = k, t
			}
		}
	}
	if best < 0 { // unreachable: the least delayed candidate is always under the bound
		best = all
	}
	reason := ReasonLowestTTFT
	if best != all {
		reason = ReasonLoadSpill
		if s.kvWait[all] > 0 {
			reason = ReasonKVSpill
		}
	}
	// Near-equal choices: the one holding most of the prompt (free hits:
	// an engine step costs the same whether it computes a few tokens or a
	// few hundred); among those, the two the prefix's rendezvous order
	// ranks first, and of the two the one with fewer requests in flight
	// (a power of two choices: the TTFT estimate hardly sees decodes, and
	// a uniform pick among ties let requests in flight drift apart, 22
	// against 34 on W6, where round robin keeps them even).
	margin := max(p.cfg.TieMargin*bestT, p.est.t0)
	near := func(k int) bool { return k == best || (s.score[k] <= bestT+margin && under(k)) }
	bestC := s.cached[s.elig[best]]
	for k, i := range s.elig {
		if near(k) && s.cached[i] > bestC {
			bestC = s.cached[i]
		}
	}
	first, second, r1, r2 := -1, -1, 0.0, 0.0
	for k, i := range s.elig {
		if !near(k) || s.cached[i] != bestC {
			continue
		}
		r := rendezvous(key, cands[i].key(), 1, true)
		switch {
		case first < 0 || r > r1:
			second, r2, first, r1 = first, r1, k, r
		case second < 0 || r > r2:
			second, r2 = k, r
		}
	}
	best = first
	if second >= 0 && s.flight[second] < s.flight[first] {
		best = second
	}
	if s.cached[s.elig[best]] == 0 {
		best = p.spread(cands, s, best, bestT, under)
	}
	hot := float64(p.cfg.Cost.HotPrefixQueueWait)
	byQueue := s.queue[best] >= hot
	// A new conversation's home is where its later turns find their
	// context, and it holds nothing of its own anywhere: on a replica whose
	// KV memory is far fuller than another's it and its neighbours' later
	// turns evict each other (W3's cold start: two replicas at 93% with two
	// idle, docs/routing.md).
	byMemory := req.OpensConversation && (s.occ[best] >= 0 || s.fill[best] >= 0)
	if hot > 0 && s.cached[s.elig[best]] > 0 && (byQueue || byMemory) {
		// Replication is deliberate: compare estimated TTFTs, without the
		// miss penalty that keeps prefixes at home.
		next, nextT, nextR := -1, p.estimate(cands, s, best, prompt, mean)+hot, 0.0
		for k, i := range s.elig {
			t := p.estimate(cands, s, k, prompt, mean)
			if k == best || t > nextT || !under(k) {
				continue
			}
			// A second home pays only where the first queues longer: the
			// queue trigger moves the prefix to a replica whose queue is
			// shorter by HotPrefixQueueWait. Where every replica queues
			// alike (an overloaded fleet) a copy adds its prefill and its
			// blocks to a queue as long, and copies of every prefix then
			// crowd each other out of memory (the ladder at 1.5×: hit rate
			// 0.125 against dynamo_kv's 0.444, docs/routing.md).
			if !(byQueue && s.queue[best]-s.queue[k] >= hot) && !(byMemory && s.roomier(k, best)) {
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
	if shed := float64(p.cfg.ShedDelay); shed > 0 {
		// Shedding: the delays above are relative to the candidates' mean
		// correction (ttftScale); times it, they are absolute again.
		abs := 1.0
		if mean > 0 {
			abs = mean
		}
		if s.delay[best]*abs > shed {
			least := -1
			for k := range s.elig {
				if !(short(k) && fits > 0) && (least < 0 || s.delay[k] < s.delay[least]) {
					least = k
				}
			}
			if least < 0 || s.delay[least]*abs > shed {
				d := Decision{Reason: ReasonShed, Eligible: len(s.elig), SummaryFallback: fallback,
					Cached: s.cached, Scores: candidateScores(s, len(cands), 1e9)}
				d.TTFTs, d.Waits, d.MemoryWaits = p.estimates(cands, s, prompt, mean)
				return -1, d, ErrOverloaded
			}
			best, reason = least, ReasonLoadSpill
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
		EstimatedTTFT:   time.Duration(math.Round(p.estimate(cands, s, best, prompt, mean))),
		Score:           s.score[best] / 1e9,
		Eligible:        len(s.elig),
		SummaryFallback: fallback,
		Cached:          s.cached,
		Scores:          candidateScores(s, len(cands), 1e9),
	}
	d.TTFTs, d.Waits, d.MemoryWaits = p.estimates(cands, s, prompt, mean)
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
// to round robin (TTFT p50 1,010 against 767 ms, docs/routing.md); taken in
// turn, arrivals reach each replica about evenly spaced, as under round
// robin, while a replica whose queue is far longer than the others' is out
// of the margin and skipped. The order is this balancer's own and starts at
// a candidate drawn from its seed (New), so many balancers rotate
// independently and their first picks do not herd.
func (p *costModel) spread(cands []Candidate, s *Scratch, best int, bestT float64, under func(int) bool) int {
	margin := p.cfg.SpreadMargin
	if margin <= 0 {
		return best
	}
	margin = max(margin*bestT, p.est.t0)
	n := len(cands)
	last := int(p.last.Load() % int64(n))
	pick, ahead := -1, n
	for k, i := range s.elig {
		if s.score[k] > bestT+margin || !under(k) {
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
// three evicted live contexts (docs/bench.md), and so would a replica that
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
// skip the replica while another has room.
//
// The engine frees memory as its requests finish. With n requests in
// flight and R̄ the mean output each may still write (w.OutputReserve / n),
// requests end at about n/R̄ a step (as they end others arrive, so n stays
// about the same), each freeing its share of the blocks in use (used/n)
// and of the reserve (R̄). The shortfall needs k = ⌈deficit / (used/n + R̄)⌉
// of them to end: k·R̄/n steps, each the length of a step of the decodes
// alone (what is queued there waits for the same memory). A few long requests holding the memory make
// a long wait (one of 4 requests writing 256 more ends every 64 steps),
// many short ones a short wait (one of 62 writing 64 more ends every step).
// k = n is R̄ steps, all in flight ending; a larger shortfall (prefills
// queued there need the memory first) waits as many more steps as the same
// rate takes to free it, for the requests admitted as the first ones end
// free theirs in turn. (It was +Inf beyond n: under overload every replica
// passed that point, and the ones that did were charged no wait at all.)
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
// wait for a full replica to free a request's blocks (docs/routing.md).
func (p *costModel) kvWait(room kvRoom, w Work) float64 {
	if room.state != kvShort {
		return 0
	}
	n := w.InFlight
	if room.used <= 0 || n <= 0 || w.OutputReserve <= 0 {
		return math.Inf(1)
	}
	rbar := float64(w.OutputReserve) / float64(n)
	k := math.Ceil(room.deficit / (room.used/float64(n) + rbar))
	steps := k * rbar / float64(n)
	decodes := w.Decodes()
	return steps * p.est.step(float64(decodes), decodes)
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
