package route

// turnRate counts a model's requests that open a conversation and those
// that continue one (Request.Turn), over about its last tallyWindow of
// them, for the move of a new conversation to a roomier replica
// (costPick.hotPrefix): that move costs the request its TTFT now and pays
// only when later turns come back to the context it keeps.
type turnRate struct{ t tally }

// see counts one request's turn; an unknown one is not counted.
func (r *turnRate) see(t Turn) {
	if t != TurnFirst && t != TurnLater {
		return
	}
	r.t.add(t == TurnFirst)
}

// continued returns the share, in [0, 1], of conversations that have a
// later turn, as the counts show it: later turns per first turn, at most 1
// (a conversation of many turns counts once). Before any turn is seen it
// is 1: one first and one later turn are assumed, so a model's first
// conversations are placed as if they went on, and single requests soon
// stop paying for contexts nobody comes back to (after 9 first turns and no
// later one, 0.1).
func (r *turnRate) continued() float64 {
	first, later := r.t.counts()
	return min(1, (later+1)/(first+1))
}
