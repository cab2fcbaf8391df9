// Package wallclock puts an instant of this process on the wall clock, the
// one clock another process can compare it with.
//
// time.Now reads the wall clock and then the monotonic clock. A thread the
// kernel deschedules between the two reads gets a Time whose wall reading is
// early for its monotonic one by as long as it waited: on the 2-core
// development machine under `stress-ng --cpu 4`, up to 8 ms in a million
// readings (95 µs when quiet). A Time's own wall reading (t.Round(0)) then
// places its instant that much early, and instants of two processes compared
// by the wall clock, with durations measured on the monotonic one, come out
// in the wrong order: a bench run's engine arrivals, joined by the wall
// clock, showed the engine's first token after the client had it.
package wallclock

import "time"

// readings is how many times Of reads the clock.
const readings = 4

// Of returns the wall-clock time of the instant t's monotonic reading marks,
// estimated from a few fresh readings as each one's wall clock less the
// monotonic time since t. A reading descheduled between its two clocks only
// makes its estimate early, so the latest estimate is kept. A t without a
// monotonic reading is returned as it is.
func Of(t time.Time) time.Time {
	return of(t, func() (time.Time, time.Duration) {
		n := time.Now()
		return n.Round(0), n.Sub(t)
	})
}

// of is Of with the readings injected: read returns a reading's wall clock
// and the monotonic time from t to it.
func of(t time.Time, read func() (wall time.Time, since time.Duration)) time.Time {
	if t.Round(0) == t { // no monotonic reading: its wall clock is all it has
		return t
	}
	var best time.Time
	for i := range readings {
		wall, since := read()
		if est := wall.Add(-since); i == 0 || est.After(best) {
			best = est
		}
	}
	return best
}
