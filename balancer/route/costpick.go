package route

import (
	"math"
	"time"
)

// costPick is one cost_model decision (costModel.Pick): the request's
// scores, queue waits, delays and waits for memory per eligible candidate,
// in its Scratch, and the sums the bound on work and the choices read.
type costPick struct {
	p      *costModel
	cands  []Candidate
	s      *Scratch
	prompt int // the request's prompt tokens
	// mean is the eligible candidates' mean TTFT correction (0: none
	// measured); every estimate is relative to it (Candidate.ttftScale).
	mean float64
	// fits counts the candidates whose KV memory holds the request.
	fits int
	// shortCharge is what a candidate short of memory with no estimate of
	// its wait is charged when every candidate is short.
	shortCharge float64
	// totalDelay and weights sum the candidates' delays and weights.
	totalDelay, weights float64
	// minBound is the least the bound on work allows: one full engine step.
	minBound float64
}

// score fills the Scratch with every eligible candidate's estimates: s.score
// (estimated TTFT plus miss penalty plus the wait for memory, corrected),
// s.queue (the queue wait), s.delay (the delay its load adds to this
// request), s.load (what its cache saves this request, the bound's third
// term), s.kvWait, s.occ, s.fill, s.flight, and the work ahead and the
// decodes it was estimated from (s.ahead, s.decodes).
func (c *costPick) score(req *Request, now time.Time) {
	p, s, prompt := c.p, c.s, c.prompt
	s.delay = s.delay[:0]
	cold, _ := p.est.ttft(queue{}, 0, prompt, 0)
	s.load = s.load[:0]
	s.kvWait = s.kvWait[:0]
	s.flight = s.flight[:0]
	s.occ = s.occ[:0]
	s.fill = s.fill[:0]
	s.ahead = s.ahead[:0]
	s.decodes = s.decodes[:0]
	unknown, known := 0, math.Inf(1) // known: the least wait for memory known
	worst := 0.0                     // the longest wait for memory known
	c.mean = meanTTFTScale(c.cands, s.elig)
	bs := req.blockSize()
	common := s.commonCached()
	for k, i := range s.elig {
		cand := &c.cands[i]
		w := p.work(cand, now)
		q, running := p.est.queueOf(w, now), w.Decodes()
		// The prediction is what the request finds when it is admitted.
		s.cached[i] = int32(p.admitted(cand, w, q, running, int(s.cached[i]), int(common[k]), bs))
		cached := int(s.cached[i])
		kv := p.kvFit(cand, w, now, prompt-cached, req.OutputTokens, bs)
		scale := cand.ttftScale(c.mean)
		ran := 0.0
		s.ends = s.ends[:0]
		if kv.state == kvShort {
			if cand.Own != nil {
				s.ends, ran = cand.Own.appendEnds(s.ends)
			}
			if pa := cand.Load.PeerAnswers; pa != nil && cand.Load.HasPeers && p.peerLoad {
				s.peerAns = pa.AppendPeerAnswers(s.peerAns[:0], now)
				d := w.Decodes()
				s.ends = appendPeerEnds(s.ends, s.peerAns, now, p.est.step(float64(d), d))
			}
		}
		kvWait := p.kvWait(kv, w, s.ends, ran, s) * scale
		switch kv.state {
		case kvFits:
			c.fits++
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
		s.ahead = append(s.ahead, q)
		s.decodes = append(s.decodes, running)
		t, wait := p.est.ttft(q, running, prompt-cached, cached)
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
		s.flight = append(s.flight, float64(w.InFlight)/cand.weight())
		c.totalDelay += delay
		c.weights += cand.weight()
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
				c.charge(k, known)
			}
		}
	}
	if c.fits == 0 && worst > 0 {
		c.shortCharge = worst
		// Every replica is short of memory. One whose wait cannot be
		// estimated is charged the longest estimated one, not nothing: with
		// nothing charged it drew every request while the others' waits
		// were counted (W6 at 135/s: runs of 91 requests to one replica).
		for k := range s.elig {
			if c.short(k) {
				c.charge(k, c.shortCharge)
			}
		}
	}
	c.minBound = p.est.step(float64(p.est.budget), 0)
}

// charge adds a wait for memory of d to eligible candidate k's score and
// delay.
func (c *costPick) charge(k int, d float64) {
	c.s.score[k] += d
	c.s.delay[k] += d
	c.totalDelay += d
}

// short reports whether eligible candidate k is short of KV memory with no
// estimate of its wait.
func (c *costPick) short(k int) bool { return math.IsInf(c.s.kvWait[k], 1) }

// under reports whether eligible candidate k is under the bound on work
// (and, while another holds the request, not short of memory).
func (c *costPick) under(k int) bool {
	if c.short(k) && c.fits > 0 {
		return false
	}
	s := c.s
	return s.delay[k] <= max(c.p.cfg.LoadFactor*c.totalDelay/c.weights*c.cands[s.elig[k]].weight(), c.minBound, s.load[k])
}

// bounded returns the candidate with the lowest score under the bound, its
// score and why: lowest_ttft when it is also the lowest were every
// replica's memory unbounded, else load_spill or kv_spill.
func (c *costPick) bounded() (best int, bestT float64, reason Reason) {
	s := c.s
	// all is the best by score with no wait for memory counted: the
	// choice, were every replica's memory unbounded.
	best, all := -1, -1
	bestT, allT := math.Inf(1), math.Inf(1)
	for k := range s.elig {
		t := s.score[k]
		a := t - c.shortCharge
		if !c.short(k) {
			a = t - s.kvWait[k]
		}
		if a < allT {
			all, allT = k, a
		}
		if t < bestT && c.under(k) {
			best, bestT = k, t
		}
	}
	if best < 0 { // every candidate not short of KV is over the bound on work
		for k := range s.elig {
			if t := s.score[k]; !c.short(k) && (best < 0 || t < bestT) {
				best, bestT = k, t
			}
		}
	}
	if best < 0 { // unreachable: the least delayed candidate is always under the bound
		best = all
	}
	reason = ReasonLowestTTFT
	if best != all {
		reason = ReasonLoadSpill
		if s.kvWait[all] > 0 {
			reason = ReasonKVSpill
		}
	}
	return best, bestT, reason
}

// nearTie returns the choice among the candidates under the bound whose
// scores are within TieMargin of best's (bestT): the one holding most of
// the prompt (free hits: an engine step costs the same whether it computes
// a few tokens or a few hundred); among those, the two the prefix's
// rendezvous order (key) ranks first, and of the two the one with fewer
// requests in flight (a power of two choices: the TTFT estimate hardly sees
// decodes, and a uniform pick among ties let requests in flight drift
// apart, 22 against 34 on W6, where round robin keeps them even).
func (c *costPick) nearTie(best int, bestT float64, key uint64) int {
	s := c.s
	margin := max(c.p.cfg.TieMargin*bestT, c.p.est.t0)
	near := func(k int) bool { return k == best || (s.score[k] <= bestT+margin && c.under(k)) }
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
		r := rendezvous(key, c.cands[i].key(), 1, true)
		switch {
		case first < 0 || r > r1:
			second, r2, first, r1 = first, r1, k, r
		case second < 0 || r > r2:
			second, r2 = k, r
		}
	}
	if second >= 0 && s.flight[second] < s.flight[first] {
		return second
	}
	return first
}

// hotPrefix moves a request whose best candidate holds part of its prompt
// to a second home for the prefix (ReasonHotPrefix) when the best one
// queues HotPrefixQueueWait or more (or, for a request opening a
// conversation, when another has far more room in memory); else it returns
// best and reason unchanged. See costModel.
func (c *costPick) hotPrefix(req *Request, best int, key uint64, reason Reason) (int, Reason) {
	s := c.s
	hot := float64(c.p.cfg.Cost.HotPrefixQueueWait)
	byQueue := s.queue[best] >= hot
	// A new conversation's home is where its later turns find their
	// context, and it holds nothing of its own anywhere: on a replica whose
	// KV memory is far fuller than another's it and its neighbours' later
	// turns evict each other (W3's cold start: two replicas at 93% with two
	// idle, docs/routing.md). Only later turns pay for such a move, so it
	// may cost the request at most HotPrefixQueueWait times the share of
	// conversations that have one (turnRate.continued): on traffic of
	// single requests nothing (on the Mooncake trace at round robin's
	// capacity the moves bought no hit and raised TTFT p99 by about a
	// fifth, docs/routing-findings.md).
	memory := hot * c.p.turns.continued()
	byMemory := req.Turn == TurnFirst && (s.occ[best] >= 0 || s.fill[best] >= 0) && memory > 0
	if hot <= 0 || s.cached[s.elig[best]] == 0 || !(byQueue || byMemory) {
		return best, reason
	}
	// Replication is deliberate: compare estimated TTFTs, without the
	// miss penalty that keeps prefixes at home.
	bestT := c.estimate(best)
	next, nextT, nextR := -1, bestT+hot, 0.0
	for k, i := range s.elig {
		t := c.estimate(k)
		if k == best || t > nextT || !c.under(k) {
			continue
		}
		// A second home pays only where the first queues longer: the
		// queue trigger moves the prefix to a replica whose queue is
		// shorter by HotPrefixQueueWait. Where every replica queues
		// alike (an overloaded fleet) a copy adds its prefill and its
		// blocks to a queue as long, and copies of every prefix then
		// crowd each other out of memory (the ladder at 1.5×: hit rate
		// 0.125 against dynamo_kv's 0.444, docs/routing-findings.md).
		if !(byQueue && s.queue[best]-s.queue[k] >= hot) && !(byMemory && t <= bestT+memory && s.roomier(k, best)) {
			continue
		}
		if r := rendezvous(key, c.cands[i].key(), 1, true); next < 0 || t < nextT || r > nextR {
			next, nextT, nextR = k, t, r
		}
	}
	if next < 0 {
		return best, reason
	}
	return next, ReasonHotPrefix
}

// admit applies Config.ShedDelay to the choice best: it returns best when
// its delay is within ShedDelay, else the least delayed candidate not short
// of memory while another holds the request, and ok false (with that one,
// or -1 when there is none) when even that one's delay exceeds ShedDelay.
// The delays are relative to the candidates' mean correction (ttftScale);
// times it, they are absolute again, as ShedDelay is.
func (c *costPick) admit(best int) (to int, ok bool) {
	s := c.s
	shed, abs := float64(c.p.cfg.ShedDelay), c.absolute()
	if s.delay[best]*abs <= shed {
		return best, true
	}
	least := -1
	for k := range s.elig {
		if !(c.short(k) && c.fits > 0) && (least < 0 || s.delay[k] < s.delay[least]) {
			least = k
		}
	}
	if least < 0 || s.delay[least]*abs > shed {
		return least, false
	}
	return least, true
}

// retryAfter is the wait a refused request is told (Decision.RetryAfter):
// how far the least delayed candidate admit would move to, least, is past
// ShedDelay, as work drains at the pace the estimate assumes; 0 without one.
func (c *costPick) retryAfter(least int) time.Duration {
	if least < 0 {
		return 0
	}
	return max(time.Duration(c.s.delay[least]*c.absolute())-c.p.cfg.ShedDelay, 0)
}

// absolute is the factor that makes a delay, relative to the candidates'
// mean correction, absolute again: that mean, or 1 when none is measured.
func (c *costPick) absolute() float64 {
	if c.mean > 0 {
		return c.mean
	}
	return 1
}

// estimate returns eligible candidate k's estimated TTFT (costModel.estimate).
func (c *costPick) estimate(k int) float64 {
	return c.p.estimate(c.cands, c.s, k, c.prompt, c.mean)
}
