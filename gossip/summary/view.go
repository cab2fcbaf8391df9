package summary

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// Errors returned by View.Apply. A caller that gets ErrGap should ask the
// sender for a snapshot (resync); ErrStale means the message is older than
// what the view holds and was ignored.
var (
	ErrGap   = errors.New("summary sequence gap")
	ErrStale = errors.New("stale summary message")
)

// viewState is one published version of a view. Its filters are shared with
// later versions of the same epoch (they only gain bits).
type viewState struct {
	epoch, seq uint64
	bytes      int // encoded size of the last snapshot
	filters    [MaxMedia]*atomicFilter
}

// View is a balancer's copy of one replica's summary. Apply must be called by
// one goroutine at a time (it serializes itself); every read method is
// lock-free and safe to call concurrently with Apply. The zero View is empty
// and ready to use.
type View struct {
	mu    sync.Mutex // serializes Apply
	state atomic.Pointer[viewState]
}

// NewView returns an empty view.
func NewView() *View { return &View{} }

// Info describes what a view holds.
type Info struct {
	// Valid reports whether the view has received a snapshot.
	Valid      bool
	Epoch, Seq uint64
	// Blocks is the number of blocks per medium (approximate: a block sent in
	// two deltas counts twice until the next epoch).
	Blocks [MaxMedia]uint64
	// Bytes is the size of the filters in bytes.
	Bytes int
}

// Info returns the view's version and size.
func (v *View) Info() Info {
	s := v.state.Load()
	if s == nil {
		return Info{}
	}
	in := Info{Valid: true, Epoch: s.epoch, Seq: s.seq}
	for i, f := range s.filters {
		if f != nil {
			in.Blocks[i] = f.count.Load()
			in.Bytes += 8 * len(f.words)
		}
	}
	return in
}

// Apply applies an encoded snapshot or delta. A snapshot replaces the view
// unless it is older than what the view holds (ErrStale). A delta must
// continue the current epoch at seq+1: an older one is ErrStale, a later one
// or one from another epoch is ErrGap (the view is left unchanged and the
// caller should request a snapshot). The view keeps no reference to b.
func (v *View) Apply(b []byte) error {
	t, err := Type(b)
	if err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	cur := v.state.Load()
	if t == TypeSnapshot {
		s, err := UnmarshalSnapshot(b)
		if err != nil {
			return err
		}
		if cur != nil && (s.Epoch < cur.epoch || s.Epoch == cur.epoch && s.Seq < cur.seq) {
			return fmt.Errorf("%w: snapshot (%d,%d) older than (%d,%d)", ErrStale, s.Epoch, s.Seq, cur.epoch, cur.seq)
		}
		ns := &viewState{epoch: s.Epoch, seq: s.Seq, bytes: len(b)}
		for _, f := range s.Filters {
			ns.filters[f.Medium] = newAtomicFilter(f)
		}
		v.state.Store(ns)
		return nil
	}
	d, err := UnmarshalDelta(b)
	if err != nil {
		return err
	}
	switch {
	case cur == nil:
		return fmt.Errorf("%w: delta (%d,%d) before any snapshot", ErrGap, d.Epoch, d.Seq)
	case d.Epoch < cur.epoch || d.Epoch == cur.epoch && d.Seq <= cur.seq:
		return fmt.Errorf("%w: delta (%d,%d) at (%d,%d)", ErrStale, d.Epoch, d.Seq, cur.epoch, cur.seq)
	case d.Epoch != cur.epoch || d.Seq != cur.seq+1:
		return fmt.Errorf("%w: delta (%d,%d) at (%d,%d)", ErrGap, d.Epoch, d.Seq, cur.epoch, cur.seq)
	}
	for _, c := range d.Changes {
		f := cur.filters[c.Medium]
		switch {
		case f == nil:
		case c.Removed:
			f.remove(c.Key)
		default:
			f.add(c.Key)
		}
	}
	ns := *cur
	ns.seq = d.Seq
	v.state.Store(&ns)
	return nil
}

// Reset empties the view (for example when its replica leaves).
func (v *View) Reset() {
	v.mu.Lock()
	v.state.Store(nil)
	v.mu.Unlock()
}

// Contains reports whether h may be held on medium m (false positives at the
// filter's rate, never a false negative for a block the view was told about;
// a block the view was told is removed is not held).
func (v *View) Contains(h kvblock.Hash, m Medium) bool {
	s := v.state.Load()
	if s == nil || int(m) >= MaxMedia || s.filters[m] == nil {
		return false
	}
	return s.filters[m].test(KeyOf(h))
}

// LongestPrefix returns how many leading hashes of a prompt's chained block
// hashes the replica holds on medium m: it walks from the first block and
// stops at the first miss. Because hashes are chained, a block present means
// its whole prefix is present, so the walk is exact except that a false
// positive can extend the match by a geometric tail.
func (v *View) LongestPrefix(hashes []kvblock.Hash, m Medium) int {
	s := v.state.Load()
	if s == nil || int(m) >= MaxMedia || s.filters[m] == nil {
		return 0
	}
	f := s.filters[m]
	for i, h := range hashes {
		if !f.test(KeyOf(h)) {
			return i
		}
	}
	return len(hashes)
}
