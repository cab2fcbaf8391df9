package wallclock

import (
	"testing"
	"time"
)

// The estimate is the latest of the readings' (wall clock less the
// monotonic time since t): a reading whose wall clock lagged its monotonic
// one, descheduled between the two, does not pull it early.
func TestOfKeepsTheLatestEstimate(t *testing.T) {
	t0 := time.Now()
	wall := t0.Round(0).Add(5 * time.Second) // t0 by the wall clock, say
	lags := []time.Duration{3 * time.Millisecond, 0, 8 * time.Millisecond, time.Millisecond}
	since := 10 * time.Millisecond
	i := 0
	got := of(t0, func() (time.Time, time.Duration) {
		lag := lags[i]
		i++
		since += time.Millisecond
		return wall.Add(since - lag), since
	})
	if want := wall; !got.Equal(want) {
		t.Errorf("of() = %v, want %v (the reading that did not lag)", got, want)
	}
	if i != readings {
		t.Errorf("read the clock %d times, want %d", i, readings)
	}
}

// A Time without a monotonic reading has only its wall clock.
func TestOfWallOnly(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC)
	if got := Of(t0); !got.Equal(t0) {
		t.Errorf("Of(%v) = %v", t0, got)
	}
	now := time.Now()
	if got := Of(now); got.Round(0) != got {
		t.Errorf("Of() = %v, want a wall-clock time without a monotonic reading", got)
	}
}
