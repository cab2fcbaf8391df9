package route

import "sync/atomic"

// turnRate counts a model's requests that open a conversation and those
// that continue one (Request.Turn), over about its last turnWindow of
// them, for the move of a new conversation to a roomier replica
// (costPick.hotPrefix): that move costs the request its TTFT now and pays
// only when later turns come back to the context it keeps. One word holds
// both counts (first turns in the high half), so counting takes no lock.
type turnRate struct{ n atomic.Uint64 }

// turnWindow is about how many of the latest turns turnRate counts: when
// the two counts reach it together both are halved.
const turnWindow = 1024

// see counts one request's turn; an unknown one is not counted.
func (r *turnRate) see(t Turn) {
	if t != TurnFirst && t != TurnLater {
		return
	}
	for {
		old := r.n.Load()
		first, later := old>>32, old&(1<<32-1)
		if t == TurnFirst {
			first++
		} else {
			later++
		}
		if first+later >= turnWindow {
			first, later = (first+1)/2, (later+1)/2
		}
		if r.n.CompareAndSwap(old, first<<32|later) {
			return
		}
	}
}

// continued returns the share, in [0, 1], of conversations that have a
// later turn, as the counts show it: later turns per first turn, at most 1
// (a conversation of many turns counts once). Before any turn is seen it
// is 1: one first and one later turn are assumed, so a model's first
// conversations are placed as if they went on, and single requests soon
// stop paying for contexts nobody comes back to (after 9 first turns and no
// later one, 0.1).
func (r *turnRate) continued() float64 {
	n := r.n.Load()
	first, later := float64(n>>32), float64(n&(1<<32-1))
	return min(1, (later+1)/(first+1))
}
