package route

import (
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// SharedKind is what a Shared record tells another balancer.
type SharedKind uint8

// Kinds of Shared records.
const (
	// SharedPlace: a request with this prompt was sent to the replica;
	// remember it for the overlay's TTL.
	SharedPlace SharedKind = 1
	// SharedPlaceText: the same for a text prefix identity (TextTTL).
	SharedPlaceText SharedKind = 2
	// SharedSettle: that request got its first byte; shorten the
	// placement to the overlay's Settle.
	SharedSettle SharedKind = 3
)

// Valid reports whether k is a known kind.
func (k SharedKind) Valid() bool { return k >= SharedPlace && k <= SharedSettle }

// SharedPoint is one prefix length a placement is remembered at: the chained
// hash of the prompt's first Blocks blocks (which names that whole prefix).
type SharedPoint struct {
	Hash   kvblock.Hash
	Blocks uint32
}

// Shared is one placement, or its settling, that a balancer's overlay sends
// to the other balancers' (OverlayConfig.Share), and they record as if they
// had made it. Replica is the replica's key, a hash of its ID that every
// balancer computes alike.
type Shared struct {
	Kind    SharedKind
	Replica uint64
	// Points are the prompt's grid points (at most MaxSharedPoints). A
	// receiver looks them up on its own grid, so balancers whose overlay
	// strides differ simply miss each other's placements.
	Points []SharedPoint
}

// MaxSharedPoints bounds Shared.Points: a prompt's grid has at most
// maxOverlayPoints strides, its length and PrefixBlocks.
const MaxSharedPoints = maxOverlayPoints + 2

// Sharer is an optional ability of a Policy: sending its placements to the
// other balancers and recording theirs. The balancer checks for it with a
// type assertion.
type Sharer interface {
	// ShareTo sets the function each placement and settling is handed to
	// (nil: stop). It is called synchronously on the routing path, so it
	// must not block; Points are valid only during the call. A policy
	// configured without sharing never calls it.
	ShareTo(sink func(Shared))
	// Learn records another balancer's placement or settling, received
	// at now. It never calls the sink.
	Learn(s Shared, now time.Time)
}

// ShareTo sets the overlay's sink (Sharer). A no-op unless the policy shares
// (cost_model and kv_aware with overlay.share).
func (b *base) ShareTo(sink func(Shared)) {
	if b.overlay == nil || !b.shares {
		return
	}
	if sink == nil {
		b.overlay.sink.Store(nil)
		return
	}
	b.overlay.sink.Store(&sink)
}

// Learn records another balancer's placement or settling in the overlay
// (Sharer; a no-op unless the policy shares).
func (b *base) Learn(s Shared, now time.Time) {
	if b.overlay != nil && b.shares {
		b.overlay.learn(s, now)
	}
}

// share hands a placement or settling of hashes on the grid to the sink, if
// one is set.
func (o *Overlay) share(s Shared, hashes []kvblock.Hash) {
	sink := o.sink.Load()
	if sink == nil || len(hashes) == 0 {
		return
	}
	var buf [MaxSharedPoints]SharedPoint
	s.Points = buf[:0]
	for b := range o.grid(len(hashes)) {
		s.Points = append(s.Points, SharedPoint{Hash: hashes[b-1], Blocks: uint32(b)})
	}
	(*sink)(s)
}

// learn records a Shared record as of now: a placement for the overlay's TTL
// (or TextTTL), a settling as Settle does.
func (o *Overlay) learn(s Shared, now time.Time) {
	t := now.UnixNano()
	switch s.Kind {
	case SharedPlace, SharedPlaceText:
		ttl := o.ttl
		if s.Kind == SharedPlaceText {
			ttl = o.textTTL
		}
		if ttl <= 0 {
			return
		}
		for _, p := range s.Points {
			if p.Blocks > 0 {
				o.store(p.Hash, s.Replica, int(p.Blocks), t+ttl, t)
			}
		}
	case SharedSettle:
		if o.settle <= 0 {
			return
		}
		for _, p := range s.Points {
			o.shorten(p.Hash, s.Replica, t+o.settle)
		}
	}
}
