package route

import (
	"math"
	"sync"
	"testing"
)

// turnRate's share of conversations that go on: 1 before any turn, later
// turns per first turn at most 1, unknown turns not counted, and the
// latest tallyWindow or so weighing alike when the counts are halved, also
// when many goroutines count at once.
func TestTurnRate(t *testing.T) {
	var r turnRate
	if got := r.continued(); got != 1 {
		t.Errorf("no turns: %v, want 1", got)
	}
	for range 9 {
		r.see(TurnFirst)
		r.see(TurnUnknown)
	}
	if got := r.continued(); math.Abs(got-0.1) > 1e-9 {
		t.Errorf("9 first turns: %v, want 0.1", got)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 3000 {
				if i%4 == 0 {
					r.see(TurnLater)
				} else {
					r.see(TurnFirst)
				}
			}
		})
	}
	wg.Wait()
	first, later := r.t.counts()
	if first+later >= tallyWindow || first+later < tallyWindow/2-2 {
		t.Errorf("counts %v and %v after 12,009 turns: want about the last %d", first, later, tallyWindow)
	}
	if got := r.continued(); math.Abs(got-1.0/3) > 0.05 {
		t.Errorf("one later turn to three first: %v, want about 1/3", got)
	}
	for range 2 * tallyWindow {
		r.see(TurnLater)
	}
	if got := r.continued(); got != 1 {
		t.Errorf("later turns only: %v, want 1", got)
	}
}
