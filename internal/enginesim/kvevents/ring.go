package kvevents

// entry is one published batch kept for replay.
type entry struct {
	seq     uint64
	payload []byte
}

// ring keeps the last cap(buf) published batches, oldest first. It is not
// safe for concurrent use; the Publisher guards it.
type ring struct {
	buf   []entry // circular, len(buf) == capacity
	start int     // index of the oldest entry
	n     int     // number of entries held
}

func newRing(capacity int) ring {
	return ring{buf: make([]entry, capacity)}
}

// add appends e, evicting the oldest entry when full.
func (r *ring) add(e entry) {
	if len(r.buf) == 0 {
		return
	}
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = e
		r.n++
		return
	}
	r.buf[r.start] = e
	r.start = (r.start + 1) % len(r.buf)
}

// since returns a copy of the entries with seq >= from, oldest first. The
// payloads are shared: they are never modified after publication.
func (r *ring) since(from uint64) []entry {
	var out []entry
	for i := range r.n {
		e := r.buf[(r.start+i)%len(r.buf)]
		if e.seq >= from {
			out = append(out, e)
		}
	}
	return out
}

// reset drops every entry.
func (r *ring) reset() {
	clear(r.buf)
	r.start, r.n = 0, 0
}
