package route

import "time"

// The load model (docs/routing.md#the-load-model): a replica's work is this
// balancer's own counts, exact at this instant, plus every other origin's
// share from the replica's newest load report while that is fresh. A report
// is written by the replica's sidecar with every response it proxies and
// every gossip period; it names this balancer's share as the sidecar counted
// it, so the share is taken out and replaced by the live own counts, never
// counted twice. Where other balancers send their own counts
// (Load.HasPeers), theirs replace their shares in the report the same way.
// Prefill work ends at a request's first token, not at its response headers.

// work returns c's work at now: in flight, pending (prefill not over) and the
// uncached prompt tokens of the pending requests.
func (b *base) work(c *Candidate, now time.Time) Work {
	w := c.ownWork()
	l := &c.Load
	peers := l.HasPeers && b.peerLoad
	if peers {
		w.Add(l.Peers)
	}
	if !b.loadFresh(c, now) {
		return w
	}
	if l.Exact {
		others, unseen := l.Others(), l.Unseen()
		if peers {
			others = l.Residual
		}
		w.InFlight += others.InFlight + unseen
		w.Pending += others.Pending + unseen
		w.PrefillTokens += others.PrefillTokens + int64(unseen)*int64(b.cfg.Cost.QueuedPromptTokens)
		w.OutputReserve += int64(others.InFlight+unseen) * int64(b.cfg.Cost.ExpectedOutputTokens)
		return w
	}
	// Only the engine's counts: they include this balancer's requests, so
	// they are a floor, not an addition.
	if n := int(l.Running + l.Waiting); n > w.InFlight {
		w.OutputReserve += int64(n-w.InFlight) * int64(b.cfg.Cost.ExpectedOutputTokens)
		w.InFlight = n
	}
	if waiting := int(l.Waiting); waiting > w.Pending {
		extra := waiting - w.Pending
		w.Pending = waiting
		w.PrefillTokens += int64(extra) * int64(b.cfg.Cost.QueuedPromptTokens)
	}
	return w
}

// load returns c's load in requests in flight (the cache-blind policies,
// prefix_hash and kv_aware balance on it).
func (b *base) load(c *Candidate, now time.Time) float64 {
	return float64(b.work(c, now).InFlight)
}

// kvState is what a balancer knows of whether a replica's KV memory holds a
// request (base.kvFit).
type kvState uint8

const (
	// kvUnknown: no capacity known, or no fresh report and this balancer's
	// own requests there leave room. No bound either way: such a replica is
	// neither turned away nor the place the bound sends what it turns away.
	kvUnknown kvState = iota
	// kvFits: a fresh report shows room for the request.
	kvFits
	// kvShort: the request does not fit, by a fresh report or by this
	// balancer's own requests there alone.
	kvShort
)

// kvRoom is what a balancer knows of a replica's KV memory for a request
// (base.kvFit).
type kvRoom struct {
	state kvState
	// deficit is the tokens the request is short by (kvShort only), and
	// used the tokens a fresh report shows in use (0 without one).
	deficit, used float64
	// occ is the share of the memory in use after the request (used,
	// queued prefill, need and the output reserve over capacity), with a
	// fresh report and a known capacity only (else 0, and known false).
	occ   float64
	known bool
	// fill is occ with the memory holding contexts (Load.HeldBlocks: the
	// running requests' blocks and the cached contexts of finished ones) in
	// place of the memory in use, where it is larger: how much of the memory
	// the request would share with contexts kept there. -1: unknown (no
	// fresh report, or one without the blocks held).
	fill float64
}

// kvFit reports whether c's KV memory holds a request needing need more
// prompt tokens of it and stating out output tokens (0: unknown) while w is
// in flight: the blocks the engine reported in use (Load.KVUsage of
// Candidate.CapacityBlocks), plus the uncached prompt tokens still to
// prefill there (they take blocks as their prefill runs), plus need, plus a
// reserve for the output every request there will still write (decodeReserve)
// against the capacity. An engine short of KV blocks does not admit the
// request until decodes finish, or preempts one and computes it again:
// either is a wait the step-time estimate does not see (costModel.kvWait
// estimates it). Without a fresh report the usage is unknown and w is this
// balancer's own work only (work): that is still a floor, so a replica it
// fills is short, and otherwise unknown, never "fits". Counted as room, a
// replica whose report lapsed took every request the bound turned away from
// the full ones (W6 at 1.5x, one balancer: 150 requests in a row to one
// replica).
func (b *base) kvFit(c *Candidate, w Work, now time.Time, need, out, bs int) kvRoom {
	if c.CapacityBlocks <= 0 {
		return kvRoom{fill: -1}
	}
	if c.BlockSize > 0 {
		bs = c.BlockSize
	}
	capacity := float64(c.CapacityBlocks) * float64(bs)
	fresh := b.loadFresh(c, now)
	r := kvRoom{fill: -1}
	if fresh {
		r.used = min(max(c.Load.KVUsage, 0), 1) * capacity
	}
	added := float64(max(w.PrefillTokens, 0)) + float64(max(need, 0)) + b.decodeReserve(w, out)
	total := r.used + added
	switch {
	case total > capacity:
		r.state, r.deficit = kvShort, total-capacity
	case fresh:
		r.state = kvFits
	}
	if fresh {
		r.occ, r.known = total/capacity, true
		if c.Load.HeldBlocks >= 0 {
			held := min(float64(c.Load.HeldBlocks)*float64(bs), capacity)
			r.fill = (max(r.used, held) + added) / capacity
		}
	}
	return r
}

// decodeReserve is the KV memory, in tokens, that the output of the requests
// in w and of a new request stating out output tokens will still take: the
// KV usage in a report counts what each request has written so far, and a
// running request's cache grows by a token a step until it finishes. Each
// request counts its CostConfig.OutputReserve: min(max_tokens, E) with E =
// Cost.ExpectedOutputTokens, E where no bound is stated or known (another
// balancer's requests, and the engine's own counts). E for a decoding
// request too, not E/2: output lengths are closer to memoryless (a request
// that has written many tokens is as likely to go on as a new one) than to
// uniform, and the bound guards a tail: admitting onto a replica whose
// decodes then outgrow its memory costs a preemption or a wait of whole
// decodes. Measured on the Mooncake trace (docs/routing.md): with E/2 the
// slowest request went to a replica at 83% KV with 11 decodes, where it
// fitted by 600 tokens, and waited 1.5 s.
func (b *base) decodeReserve(w Work, out int) float64 {
	return float64(max(w.OutputReserve, 0)) + float64(b.cfg.Cost.OutputReserve(out))
}

// WorkOf returns the work p's load model sees on c at now: this balancer's
// own counts plus the other origins' share from a fresh report (see work).
// Explain and the decision log show it as a candidate's queue.
func WorkOf(p Policy, c *Candidate, now time.Time) Work {
	if b, ok := p.(interface {
		work(*Candidate, time.Time) Work
	}); ok {
		return b.work(c, now)
	}
	return c.ownWork()
}
