package route

import (
	"sync"
	"sync/atomic"
	"time"
)

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

	// The step clock (Step): mu orders its writers (Sent, Prefilled); Step
	// reads end and queued without it, so a decision takes no lock.
	mu sync.Mutex
	// steps counts the engine step ends this balancer has seen there (a
	// Ticket is its value when a request was sent), and end is the last,
	// in Unix nanoseconds (0: none).
	steps uint64
	end   atomic.Int64
	// queued is the part of PendingPrefillTokens sent after end.
	queued atomic.Int64

	// changed is called after each change Sent, Prefilled or Done makes
	// (Watch; nil: none).
	changed atomic.Pointer[func()]

	// answers are the streams followed for the TPOT guard (Follow).
	answers answers
}

// Watch sets f to be called after every change of the counts that Sent,
// Prefilled and Done make (nil: none); the fleet uses it to send this
// balancer's load to the others. StepEnded, called for every token of every
// stream, does not call it: a step end alone changes no count. f runs on the
// request path and must not block.
func (c *Counters) Watch(f func()) {
	if f == nil {
		c.changed.Store(nil)
		return
	}
	c.changed.Store(&f)
}

func (c *Counters) notify() {
	if f := c.changed.Load(); f != nil {
		(*f)()
	}
}

// Snapshot returns the counts as a Work (InFlight, Pending, PrefillTokens,
// OutputReserve, and the step split of Step), read without a lock, each
// count at least 0.
func (c *Counters) Snapshot() Work {
	w := Work{
		InFlight: int(max(c.InFlight.Load(), 0)), Pending: int(max(c.Pending.Load(), 0)),
		PrefillTokens: max(c.PendingPrefillTokens.Load(), 0), OutputReserve: max(c.OutputReserve.Load(), 0),
	}
	w.StepTokens, w.StepStart = c.Step()
	w.StepTokens = min(w.StepTokens, w.PrefillTokens)
	return w
}

// A Ticket is a request's place on its replica's step clock: the step ends
// the balancer had seen there when it sent the request (Counters.Sent).
type Ticket uint64

// Sent records a request's uncached prompt tokens as pending prefill, queued
// behind the step under way, and returns its ticket for Prefilled and Done.
// fleet.Replica.TryAcquire calls it.
func (c *Counters) Sent(uncached int) Ticket {
	defer c.notify()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queued.Add(int64(uncached))
	c.PendingPrefillTokens.Add(int64(uncached))
	return Ticket(c.steps)
}

// Prefilled records that a started request's prefill is over. Call it at
// most once per request, with the uncached and ticket its lease counted,
// and first the time its first token was seen, or zero where the end is
// estimated (a non-streaming request's). A first token ends an engine step:
// unless the step end was already counted by another request of the same
// step (one sent before the previous step end seen), the requests still
// pending are in the step now under way, not queued behind it.
func (c *Counters) Prefilled(uncached int, t Ticket, first time.Time) {
	defer c.notify()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Pending.Add(-1)
	c.PendingPrefillTokens.Add(-int64(uncached))
	if uint64(t) == c.steps {
		c.queued.Add(-int64(uncached))
	}
	if !first.IsZero() && uint64(t)+1 >= c.steps {
		c.steps++
		c.end.Store(first.UnixNano())
		c.queued.Store(0)
	}
}

// Done records the end of a started request, with the uncached, output and
// ticket its lease counted. prefilled reports whether Prefilled was called
// for it; if not, Done also undoes its pending counts.
func (c *Counters) Done(uncached, output int, t Ticket, prefilled bool) {
	if !prefilled {
		c.Prefilled(uncached, t, time.Time{})
	}
	c.OutputReserve.Add(-int64(output))
	c.InFlight.Add(-1)
	c.notify()
}

// StepEnded records an engine step end seen at at on a stream already past
// its first token (its next token, its end): like a first token, it puts
// every request still pending in the step that began then. Without it a
// prefill sent while only decodes ran there was counted as queued until a
// first token ended some step, so a replica 180 ms into an 8,000-token
// prefill looked as busy as one that had just been sent it (the Mooncake
// trace at 0.5×, docs/routing-findings.md#the-load-model-measurements).
func (c *Counters) StepEnded(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steps++
	c.end.Store(at.UnixNano())
	c.queued.Store(0)
}

// Step splits PendingPrefillTokens at the last engine step end this
// balancer saw on the replica: inStep is the tokens sent before it, which
// the engine took into the step that began then (and, beyond its token
// budget, the next ones), and end is that step end (zero: none seen). The
// rest were sent after it and queue behind that step. The engine schedules
// at the start of a step, so a request sent now waits for the rest of the
// step under way and then prefills with the queued ones: counting the step's
// own prefills as queued charged a replica mid-step for work it was about to
// finish, and sent the next several requests to the one whose step had just
// ended (W6, docs/routing.md#the-load-model).
//
// Its two reads are not taken together: a request sent between them can
// count as in the step, and the caller caps inStep at the pending tokens it
// read (Candidate.ownWork).
func (c *Counters) Step() (inStep int64, end time.Time) {
	q, e := c.queued.Load(), c.end.Load()
	inStep = max(c.PendingPrefillTokens.Load()-q, 0)
	if e != 0 {
		end = time.Unix(0, e)
	}
	return inStep, end
}
