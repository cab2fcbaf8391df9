package fleet

import (
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/route"

	"github.com/google/go-cmp/cmp"
)

type counts struct{ InFlight, Pending, Tokens, Output int64 }

func countsOf(r *Replica) counts {
	c := &r.Counters
	return counts{c.InFlight.Load(), c.Pending.Load(), c.PendingPrefillTokens.Load(), c.OutputReserve.Load()}
}

// A lease's whole life through the production path: TryAcquire counts it
// against the caps, Counters.Prefilled and Counters.Done release it.
func TestTryAcquireLifecycle(t *testing.T) {
	s := spec("r", "m")
	r := newReplica(s)
	// Each request here reserves a tenth of its uncached for its output;
	// tickets holds the tickets of the acquired ones, in order.
	var tickets []route.Ticket
	acquire := func(uncached int, want bool) func() {
		return func() {
			ticket, got := r.TryAcquire(uncached, uncached/10)
			if got != want {
				t.Errorf("TryAcquire(%d, %d) = %v, want %v", uncached, uncached/10, got, want)
			}
			if got {
				tickets = append(tickets, ticket)
			}
		}
	}
	caps := func(conc, pend int) func() {
		return func() { r.MaxConcurrency, r.MaxPending = conc, pend }
	}
	steps := []struct {
		name string
		do   func()
		want counts
	}{
		{"acquire without caps", acquire(100, true), counts{1, 1, 100, 10}},
		{"acquire another", acquire(50, true), counts{2, 2, 150, 15}},
		{"first token", func() { r.Counters.Prefilled(100, tickets[0], time.Now()) }, counts{2, 1, 50, 15}},
		{"done after the first token", func() { r.Counters.Done(100, 10, tickets[0], true) }, counts{1, 1, 50, 5}},
		{"done before the first token", func() { r.Counters.Done(50, 5, tickets[1], false) }, counts{0, 0, 0, 0}},
		{"acquire under the caps", func() { caps(1, 1)(); acquire(10, true)() }, counts{1, 1, 10, 1}},
		{"refused at the concurrency cap", func() { caps(1, 0)(); acquire(10, false)() }, counts{1, 1, 10, 1}},
		{"refused at the pending cap", func() { caps(0, 1)(); acquire(10, false)() }, counts{1, 1, 10, 1}},
		{"pending cap with a free concurrency slot", func() { caps(2, 1)(); acquire(10, false)() }, counts{1, 1, 10, 1}},
		{"first token frees the pending slot", func() { r.Counters.Prefilled(10, tickets[2], time.Now()); acquire(50, true)() }, counts{2, 1, 50, 6}},
		{"no caps again", func() { caps(0, 0)(); acquire(50, true)() }, counts{3, 2, 100, 11}},
	}
	for _, st := range steps {
		st.do()
		if diff := cmp.Diff(st.want, countsOf(r)); diff != "" {
			t.Fatalf("after %s (-want +got):\n%s", st.name, diff)
		}
	}
}
