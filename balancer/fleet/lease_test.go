package fleet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

type counts struct{ InFlight, Pending, Tokens int64 }

func countsOf(r *Replica) counts {
	c := &r.Counters
	return counts{c.InFlight.Load(), c.Pending.Load(), c.PendingPrefillTokens.Load()}
}

// A lease's whole life through the production path: TryAcquire counts it
// against the caps, Counters.Prefilled and Counters.Done release it.
func TestTryAcquireLifecycle(t *testing.T) {
	s := spec("r", "m")
	r := newReplica(s)
	acquire := func(uncached int, want bool) func() {
		return func() {
			if got := r.TryAcquire(uncached); got != want {
				t.Errorf("TryAcquire(%d) = %v, want %v", uncached, got, want)
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
		{"acquire without caps", acquire(100, true), counts{1, 1, 100}},
		{"acquire another", acquire(50, true), counts{2, 2, 150}},
		{"first token", func() { r.Counters.Prefilled(100) }, counts{2, 1, 50}},
		{"done after the first token", func() { r.Counters.Done(100, true) }, counts{1, 1, 50}},
		{"done before the first token", func() { r.Counters.Done(50, false) }, counts{0, 0, 0}},
		{"acquire under the caps", func() { caps(1, 1)(); acquire(10, true)() }, counts{1, 1, 10}},
		{"refused at the concurrency cap", func() { caps(1, 0)(); acquire(10, false)() }, counts{1, 1, 10}},
		{"refused at the pending cap", func() { caps(0, 1)(); acquire(10, false)() }, counts{1, 1, 10}},
		{"pending cap with a free concurrency slot", func() { caps(2, 1)(); acquire(10, false)() }, counts{1, 1, 10}},
		{"first token frees the pending slot", func() { r.Counters.Prefilled(10); acquire(5, true)() }, counts{2, 1, 5}},
		{"no caps again", func() { caps(0, 0)(); acquire(5, true)() }, counts{3, 2, 10}},
	}
	for _, st := range steps {
		st.do()
		if diff := cmp.Diff(st.want, countsOf(r)); diff != "" {
			t.Fatalf("after %s (-want +got):\n%s", st.name, diff)
		}
	}
}
