package route

import "sync/atomic"

// Counters are the balancer's own per-replica counts, owned by the fleet and
// shared by every snapshot that holds the replica. They are exact for this
// balancer and never stale, which is why routing falls back to them when the
// gossiped load is too old. The zero value is ready to use.
type Counters struct {
	// InFlight is the requests this balancer is proxying to the replica.
	InFlight atomic.Int64
	// Pending is the subset of InFlight whose prefill is not over (queued
	// or prefilling on the engine): until a stream's first token, or a
	// non-streaming request's estimated prefill end (docs/routing.md).
	Pending atomic.Int64
	// PendingPrefillTokens is the predicted uncached prompt tokens of the
	// Pending requests: the prefill work this balancer has queued there.
	PendingPrefillTokens atomic.Int64
}

// Start records a request sent to the replica with uncached predicted
// uncached prompt tokens (Decision.UncachedTokens).
func (c *Counters) Start(uncached int) {
	c.InFlight.Add(1)
	c.Pending.Add(1)
	c.PendingPrefillTokens.Add(int64(uncached))
}

// TryStart is Start that enforces the caps exactly: it fails, changing
// nothing, when InFlight is already at maxConcurrency or Pending at
// maxPending (0: no cap). Pick reads the caps without a lock, so two
// concurrent decisions may both see the last free slot; TryStart is where the
// lease is taken atomically, and a caller that loses the race picks again.
func (c *Counters) TryStart(uncached, maxConcurrency, maxPending int) bool {
	if !tryIncrement(&c.InFlight, maxConcurrency) {
		return false
	}
	if !tryIncrement(&c.Pending, maxPending) {
		c.InFlight.Add(-1)
		return false
	}
	c.PendingPrefillTokens.Add(int64(uncached))
	return true
}

// tryIncrement adds one to v unless that would reach beyond limit (0: none).
func tryIncrement(v *atomic.Int64, limit int) bool {
	if limit <= 0 {
		v.Add(1)
		return true
	}
	for {
		n := v.Load()
		if n >= int64(limit) {
			return false
		}
		if v.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Prefilled records that a started request's prefill is over. Call it at
// most once per Start, with the same uncached.
func (c *Counters) Prefilled(uncached int) {
	c.Pending.Add(-1)
	c.PendingPrefillTokens.Add(-int64(uncached))
}

// Done records the end of a started request. prefilled reports whether
// Prefilled was called for it; if not, Done also undoes its pending counts.
func (c *Counters) Done(uncached int, prefilled bool) {
	if !prefilled {
		c.Prefilled(uncached)
	}
	c.InFlight.Add(-1)
}
