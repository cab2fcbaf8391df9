package balancer

import (
	"sync/atomic"
	"time"

	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/route"
)

// lease is one attempt's claim on a replica's counts (route.Counters): taken
// by fleet.Replica.TryAcquire before the request is sent, its prefill part
// released when the prefill is over (a stream's first token-bearing event, a
// non-streaming request's estimated prefill end or its response, whichever
// comes first) and the rest when the attempt ends (docs/routing.md).
type lease struct {
	rep       *fleet.Replica
	uncached  int
	output    int          // the request's OutputReserve
	ticket    route.Ticket // from TryAcquire
	prefilled atomic.Bool
	timer     *time.Timer // the estimated prefill end of a non-streaming request
	// answer follows a stream for the TPOT guard (nil: not followed;
	// route.SLOConfig).
	answer *route.Answer
}

// prefillAfter releases the prefill part after d, unless prefill is called
// first.
func (l *lease) prefillAfter(d time.Duration) {
	l.timer = time.AfterFunc(max(d, 0), func() { l.prefill(time.Time{}) })
}

// prefill releases the prefill part of the lease (at most once): first is
// when the stream's first token was seen, zero where the end is estimated
// (route.Counters.Prefilled).
func (l *lease) prefill(first time.Time) {
	if l.prefilled.CompareAndSwap(false, true) {
		l.rep.Counters.Prefilled(l.uncached, l.ticket, first)
	}
}

// release ends the lease. Call it exactly once.
func (l *lease) release() {
	if l.timer != nil {
		l.timer.Stop()
	}
	l.rep.Counters.Unfollow(l.answer)
	l.rep.Counters.Done(l.uncached, l.output, l.ticket, l.prefilled.Swap(true))
}
