package route

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type counts struct{ InFlight, Pending, Tokens int64 }

func read(c *Counters) counts {
	return counts{c.InFlight.Load(), c.Pending.Load(), c.PendingPrefillTokens.Load()}
}

func TestCountersLifecycle(t *testing.T) {
	var c Counters
	steps := []struct {
		name string
		do   func()
		want counts
	}{
		{"start", func() { c.Start(100) }, counts{1, 1, 100}},
		{"start another", func() { c.Start(50) }, counts{2, 2, 150}},
		{"first byte", func() { c.Prefilled(100) }, counts{2, 1, 50}},
		{"done after first byte", func() { c.Done(100, true) }, counts{1, 1, 50}},
		{"done before first byte", func() { c.Done(50, false) }, counts{0, 0, 0}},
		{"try start under caps", func() {
			if !c.TryStart(10, 1, 1) {
				t.Error("TryStart refused a free slot")
			}
		}, counts{1, 1, 10}},
		{"try start at the concurrency cap", func() {
			if c.TryStart(10, 1, 0) {
				t.Error("TryStart went over MaxConcurrency")
			}
		}, counts{1, 1, 10}},
		{"try start at the pending cap", func() {
			if c.TryStart(10, 0, 1) {
				t.Error("TryStart went over MaxPending")
			}
		}, counts{1, 1, 10}},
		{"try start without caps", func() { c.TryStart(5, 0, 0) }, counts{2, 2, 15}},
	}
	for _, s := range steps {
		s.do()
		if diff := cmp.Diff(s.want, read(&c)); diff != "" {
			t.Fatalf("after %s (-want +got):\n%s", s.name, diff)
		}
	}
}

// Concurrent TryStart never exceeds the cap.
func TestTryStartEnforcesCapUnderContention(t *testing.T) {
	var c Counters
	const limit = 7
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if c.TryStart(1, limit, 0) {
					mu.Lock()
					won++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if won != limit || c.InFlight.Load() != limit {
		t.Errorf("%d leases won, in flight %d, want exactly %d", won, c.InFlight.Load(), limit)
	}
}
