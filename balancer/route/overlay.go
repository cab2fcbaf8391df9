package route

import (
	"iter"
	"sync/atomic"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// maxOverlayPoints bounds OverlayConfig.MaxPoints.
const maxOverlayPoints = 64

// Overlay remembers this balancer's recent placements for a short time, so
// that a burst of requests sharing a new prefix lands together before the
// replica's gossiped summary shows the prefix (docs/design.md §4).
//
// A placement of a prompt with n blocks is remembered at a few prefix
// lengths: n itself, the first PrefixBlocks blocks, and every multiple of a
// stride (Stride doubled until at most MaxPoints multiples fit, so the grids
// of short and long prompts nest). Because block hashes are chained, the hash
// of block i names the whole prefix 0..i, so a later prompt that shares that
// prefix finds the entry at the same grid point.
//
// The table is bounded and 2-way set-associative: a prefix can be remembered
// on two replicas at once (its first home and the replica a hot prefix was
// replicated to), and a newer entry evicts, in order, a dead one, another
// prefix's, then the older of the prefix's two. Every slot is a seqlock over
// atomic words, so lookups are lock-free and never wait, and a write that
// races another write to the same slot is dropped (the overlay is a hint).
// Safe for concurrent use.
type Overlay struct {
	slots        []slot
	mask         uint64
	ttl          int64
	textTTL      int64
	settle       int64
	stride       int
	maxPoints    int
	prefixBlocks int
	// sink receives this balancer's placements and settlings to send to
	// the other balancers (nil: not shared; ShareTo sets it).
	sink atomic.Pointer[func(Shared)]
}

type slot struct {
	seq     atomic.Uint64 // odd while a write is in progress
	key     atomic.Uint64
	replica atomic.Uint64
	expires atomic.Int64 // Unix nanoseconds
	blocks  atomic.Uint32
}

// overlayHit is one replica's longest remembered prefix for a prompt.
type overlayHit struct {
	replica uint64
	blocks  int
}

// NewOverlay returns an empty overlay. prefixBlocks is the prefix length
// always remembered (Config.PrefixBlocks). cfg must be valid.
func NewOverlay(cfg OverlayConfig, prefixBlocks int) *Overlay {
	n := max(cfg.Slots, 2) // one 2-way set at least
	return &Overlay{
		slots:        make([]slot, n),
		mask:         uint64(n - 1),
		ttl:          int64(cfg.TTL),
		textTTL:      int64(cfg.TextTTL),
		settle:       int64(cfg.Settle),
		stride:       max(cfg.Stride, 1),
		maxPoints:    max(cfg.MaxPoints, 1),
		prefixBlocks: max(prefixBlocks, 1),
	}
}

// place records a policy's pick of replica for req: for TTL, or for TextTTL
// when req's hashes are a text prefix identity, which no summary can confirm
// (nor Settle shorten).
func (o *Overlay) place(req *Request, replica uint64, now time.Time) {
	ttl, kind := o.ttl, SharedPlace
	if req.TextPrefix {
		ttl, kind = o.textTTL, SharedPlaceText
	}
	o.record(req.Hashes, replica, now, ttl)
	if ttl > 0 {
		o.share(Shared{Kind: kind, Replica: replica}, req.Hashes)
	}
}

// Settle shortens the placements of this prompt on replicaID to expire at
// most Settle after now: called when the placed request got its first byte,
// its prefill is done and the replica's summary will show the blocks within
// a gossip interval. From then on the summary, which also hears of
// evictions, decides; without this a placement would be predicted for the
// whole TTL even after the replica evicted it. No-op when Settle is 0.
func (o *Overlay) Settle(hashes []kvblock.Hash, replicaID string, now time.Time) {
	n := len(hashes)
	if n == 0 || o.settle <= 0 {
		return
	}
	replica, exp := hashID(replicaID), now.UnixNano()+o.settle
	for b := range o.grid(n) {
		o.shorten(hashes[b-1], replica, exp)
	}
	o.share(Shared{Kind: SharedSettle, Replica: replica}, hashes)
}

// shorten lowers the expiry of h's entry on replica to exp, if it is later.
func (o *Overlay) shorten(h kvblock.Hash, replica uint64, exp int64) {
	pair := o.pair(h)
	for k := range pair {
		sl := &pair[k]
		if sl.key.Load() != uint64(h) || sl.replica.Load() != replica || sl.expires.Load() <= exp {
			continue
		}
		seq := sl.seq.Load()
		if seq&1 != 0 || !sl.seq.CompareAndSwap(seq, seq+1) {
			continue // a write is in progress: it refreshes the slot anyway
		}
		if sl.key.Load() == uint64(h) && sl.replica.Load() == replica && sl.expires.Load() > exp {
			sl.expires.Store(exp)
		}
		sl.seq.Store(seq + 2)
	}
}

func (o *Overlay) record(hashes []kvblock.Hash, replica uint64, now time.Time, ttl int64) {
	n := len(hashes)
	if n == 0 || ttl <= 0 {
		return
	}
	t := now.UnixNano()
	exp := t + ttl
	for b := range o.grid(n) {
		o.store(hashes[b-1], replica, b, exp, t)
	}
}

// lookup appends to dst, per replica, the longest live remembered prefix of
// hashes.
func (o *Overlay) lookup(hashes []kvblock.Hash, now time.Time, dst []overlayHit) []overlayHit {
	t := now.UnixNano()
	for b := range o.grid(len(hashes)) {
		dst = o.probe(dst, hashes[b-1], b, t)
	}
	return dst
}

// grid yields the prefix lengths, in blocks, a prompt of n blocks is
// remembered at: n, every multiple of its stride below n, and PrefixBlocks
// when it is below n and off the grid.
func (o *Overlay) grid(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		if n <= 0 || !yield(n) {
			return
		}
		stride := o.strideFor(n)
		for b := stride; b < n; b += stride {
			if !yield(b) {
				return
			}
		}
		if p := o.prefixBlocks; p < n && p%stride != 0 {
			yield(p)
		}
	}
}

// strideFor returns the grid stride for a prompt of n blocks: Stride doubled
// until at most maxPoints grid points fit.
func (o *Overlay) strideFor(n int) int {
	s := o.stride
	for n/s > o.maxPoints {
		s *= 2
	}
	return s
}

func (o *Overlay) store(h kvblock.Hash, replica uint64, blocks int, exp, now int64) {
	pair := o.pair(h)
	// Victim order: this very entry (refresh), a dead slot, another prefix,
	// then this prefix on another replica; the older on a tie.
	rank := func(sl *slot) (int, int64) {
		key, rep, e := sl.key.Load(), sl.replica.Load(), sl.expires.Load()
		switch {
		case key == uint64(h) && rep == replica:
			return 0, e
		case e <= now:
			return 1, e
		case key != uint64(h):
			return 2, e
		default:
			return 3, e
		}
	}
	sl := &pair[0]
	r0, e0 := rank(&pair[0])
	if r1, e1 := rank(&pair[1]); r1 < r0 || r1 == r0 && e1 < e0 {
		sl = &pair[1]
	}
	seq := sl.seq.Load()
	if seq&1 != 0 || !sl.seq.CompareAndSwap(seq, seq+1) {
		return // another write is in progress: drop this one
	}
	sl.key.Store(uint64(h))
	sl.replica.Store(replica)
	sl.expires.Store(exp)
	sl.blocks.Store(uint32(blocks))
	sl.seq.Store(seq + 2)
}

// pair returns the two slots (a 2-way set) where h may live.
func (o *Overlay) pair(h kvblock.Hash) *[2]slot {
	i := mix64(uint64(h)) & o.mask &^ 1
	return (*[2]slot)(o.slots[i : i+2])
}

func (o *Overlay) probe(dst []overlayHit, h kvblock.Hash, blocks int, now int64) []overlayHit {
	pair := o.pair(h)
	for k := range pair {
		sl := &pair[k]
		seq := sl.seq.Load()
		if seq&1 != 0 {
			continue
		}
		key, replica, exp, got := sl.key.Load(), sl.replica.Load(), sl.expires.Load(), sl.blocks.Load()
		if sl.seq.Load() != seq || key != uint64(h) || exp <= now || int(got) != blocks {
			continue
		}
		dst = addHit(dst, replica, blocks)
	}
	return dst
}

// addHit merges a remembered prefix into dst, keeping the longest per replica.
func addHit(dst []overlayHit, replica uint64, blocks int) []overlayHit {
	for i := range dst {
		if dst[i].replica == replica {
			dst[i].blocks = max(dst[i].blocks, blocks)
			return dst
		}
	}
	return append(dst, overlayHit{replica: replica, blocks: blocks})
}
