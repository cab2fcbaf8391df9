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
	// OutputReserve is the KV memory, in tokens, the outputs of the
	// InFlight requests may still take: each one's CostConfig.OutputReserve,
	// counted until it ends.
	OutputReserve atomic.Int64
}

// Prefilled records that a started request's prefill is over. Call it at
// most once per request, with the uncached its lease counted (the fleet takes
// leases: fleet.Replica.TryAcquire).
func (c *Counters) Prefilled(uncached int) {
	c.Pending.Add(-1)
	c.PendingPrefillTokens.Add(-int64(uncached))
}

// Done records the end of a started request, with the uncached and output
// its lease counted. prefilled reports whether Prefilled was called for it;
// if not, Done also undoes its pending counts.
func (c *Counters) Done(uncached, output int, prefilled bool) {
	if !prefilled {
		c.Prefilled(uncached)
	}
	c.OutputReserve.Add(-int64(output))
	c.InFlight.Add(-1)
}
