package route

import "sync/atomic"

// tally counts events of two kinds over about the latest tallyWindow of
// them: when the two counts reach it together both are halved. One word
// holds both (the first kind in the high half), so counting takes no lock.
type tally struct{ n atomic.Uint64 }

// tallyWindow is about how many of the latest events a tally counts.
const tallyWindow = 1024

// add counts one event, of the first kind if first.
func (t *tally) add(first bool) {
	for {
		old := t.n.Load()
		a, b := old>>32, old&(1<<32-1)
		if first {
			a++
		} else {
			b++
		}
		if a+b >= tallyWindow {
			a, b = (a+1)/2, (b+1)/2
		}
		if t.n.CompareAndSwap(old, a<<32|b) {
			return
		}
	}
}

// counts returns the two counts: of the first kind and of the other.
func (t *tally) counts() (first, other float64) {
	n := t.n.Load()
	return float64(n >> 32), float64(n & (1<<32 - 1))
}
