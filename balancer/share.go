package balancer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// Placements shared between balancers (docs/routing.md#placements-shared-
// between-balancers). A policy that shares (route.Sharer) hands each of its
// placements and settlings to the balancer's placementSharer, which batches
// them and sends them to the other balancers over the gossip
// (gossip.Node.SendPlacements); a balancer that receives a batch records each
// one in its own policy for that model.
//
// The body of one gossip message is one or more groups, each
//
//	model       uvarint length, bytes (1..maxSharedModel)
//	count       uvarint (>= 1)
//	count records:
//	  kind      byte (route.SharedKind)
//	  replica   8 bytes, little endian (the replica's key)
//	  points    uvarint (1..route.MaxSharedPoints)
//	  points × (hash 8 bytes little endian, blocks uvarint 1..2^31-1)
//
// and ends with the last group.

// maxSharedModel bounds a model name on the wire.
const maxSharedModel = 256

// errPlacements is wrapped by every placement decoding error.
var errPlacements = errors.New("malformed placements")

// appendSharedRecord appends one record to b.
func appendSharedRecord(b []byte, s route.Shared) []byte {
	b = append(b, byte(s.Kind))
	b = binary.LittleEndian.AppendUint64(b, s.Replica)
	b = binary.AppendUvarint(b, uint64(len(s.Points)))
	for _, p := range s.Points {
		b = binary.LittleEndian.AppendUint64(b, uint64(p.Hash))
		b = binary.AppendUvarint(b, uint64(p.Blocks))
	}
	return b
}

// appendSharedGroup appends a group's model and count; its records follow.
func appendSharedGroup(b []byte, model string, count int) []byte {
	b = binary.AppendUvarint(b, uint64(len(model)))
	b = append(b, model...)
	return binary.AppendUvarint(b, uint64(count))
}

// decodePlacements calls f for each record of body in order. A record's
// Points are valid only during the call. On a malformed body it returns an
// error wrapping errPlacements; the records before the error were passed.
func decodePlacements(body []byte, f func(model string, s route.Shared)) error {
	var pts [route.MaxSharedPoints]route.SharedPoint
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errPlacements}, args...)...)
	}
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(body)
		if n <= 0 {
			return 0, false
		}
		body = body[n:]
		return v, true
	}
	if len(body) == 0 {
		return fail("empty")
	}
	for len(body) > 0 {
		n, ok := uvarint()
		if !ok || n == 0 || n > maxSharedModel || n > uint64(len(body)) {
			return fail("model name of %d bytes", n)
		}
		model := string(body[:n])
		body = body[n:]
		count, ok := uvarint()
		if !ok || count == 0 {
			return fail("model %q: %d records", model, count)
		}
		for range count {
			if len(body) < 9 {
				return fail("model %q: truncated record", model)
			}
			s := route.Shared{Kind: route.SharedKind(body[0]), Replica: binary.LittleEndian.Uint64(body[1:9])}
			body = body[9:]
			if !s.Kind.Valid() {
				return fail("model %q: record kind %d", model, s.Kind)
			}
			np, ok := uvarint()
			if !ok || np == 0 || np > route.MaxSharedPoints {
				return fail("model %q: %d points", model, np)
			}
			s.Points = pts[:0]
			for range np {
				if len(body) < 8 {
					return fail("model %q: truncated point", model)
				}
				h := kvblock.Hash(binary.LittleEndian.Uint64(body))
				body = body[8:]
				blocks, ok := uvarint()
				if !ok || blocks == 0 || blocks > math.MaxInt32 {
					return fail("model %q: point of %d blocks", model, blocks)
				}
				s.Points = append(s.Points, route.SharedPoint{Hash: h, Blocks: uint32(blocks)})
			}
			f(model, s)
		}
	}
	return nil
}

// maxPendingShared bounds the bytes of records waiting to be sent: past it
// (the gossip cannot keep up) new placements are not shared.
const maxPendingShared = 1 << 20

// placementSharer batches a balancer's placements and sends them to the
// other balancers: the first record after a send wakes the sender at once,
// and whatever arrives while it sends goes in the next batch, so under load
// a message carries several records and when idle none waits.
type placementSharer struct {
	sendMsg func(body []byte) error // gossip.Node.SendPlacements
	// others is gossip.Node.OtherBalancers: while it is 0 nothing is
	// queued.
	others func() int
	log    *slog.Logger
	m      *metrics

	mu      sync.Mutex // protects buf and recs
	buf     []byte     // encoded records
	recs    []sharedRef
	wake    chan struct{}
	scratch []byte // sender goroutine only
}

// sharedRef is one encoded record in placementSharer.buf.
type sharedRef struct {
	model      string
	start, end int
}

func newPlacementSharer(send func(body []byte) error, others func() int, log *slog.Logger, m *metrics) *placementSharer {
	return &placementSharer{sendMsg: send, others: others, log: log, m: m, wake: make(chan struct{}, 1)}
}

// add queues a record of model, unless no other balancer is alive to take
// it. It never blocks.
func (p *placementSharer) add(model string, s route.Shared) {
	if p.others() == 0 {
		return
	}
	p.mu.Lock()
	if len(p.buf) >= maxPendingShared {
		p.mu.Unlock()
		p.m.sharedPlacements.WithLabelValues("dropped").Inc()
		return
	}
	start := len(p.buf)
	p.buf = appendSharedRecord(p.buf, s)
	p.recs = append(p.recs, sharedRef{model: model, start: start, end: len(p.buf)})
	first := len(p.recs) == 1
	p.mu.Unlock()
	if first {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// run sends queued records until done closes.
func (p *placementSharer) run(done <-chan struct{}) {
	var buf []byte
	var recs []sharedRef
	for {
		select {
		case <-done:
			return
		case <-p.wake:
		}
		p.mu.Lock()
		buf, p.buf = p.buf, buf[:0]
		recs, p.recs = p.recs, recs[:0]
		p.mu.Unlock()
		p.send(buf, recs)
	}
}

// send sends recs (encoded in buf) in messages of at most
// gossip.MaxPlacementsBytes, grouping consecutive records of one model.
func (p *placementSharer) send(buf []byte, recs []sharedRef) {
	msg := p.scratch[:0]
	n := 0 // records in msg
	for i := 0; i < len(recs); {
		model := recs[i].model
		// The records of this group that fit the message.
		var head [binary.MaxVarintLen64]byte
		size := len(msg) + binary.PutUvarint(head[:], uint64(len(model))) + len(model) + binary.MaxVarintLen16
		j := i
		for j < len(recs) && recs[j].model == model && size+recs[j].end-recs[j].start <= gossip.MaxPlacementsBytes {
			size += recs[j].end - recs[j].start
			j++
		}
		if j == i { // the message is full
			if len(msg) == 0 { // a record too large for any message (never, by its bounds)
				p.m.sharedPlacements.WithLabelValues("dropped").Inc()
				i++
				continue
			}
			p.flush(msg, n)
			msg, n = msg[:0], 0
			continue
		}
		msg = appendSharedGroup(msg, model, j-i)
		for _, r := range recs[i:j] {
			msg = append(msg, buf[r.start:r.end]...)
		}
		n += j - i
		i = j
	}
	if len(msg) > 0 {
		p.flush(msg, n)
	}
	p.scratch = msg[:0]
}

// flush sends msg, holding n records, and counts them sent if it went out.
func (p *placementSharer) flush(msg []byte, n int) {
	if err := p.sendMsg(msg); err != nil {
		p.log.Warn("share placements", "err", err)
		p.m.sharedPlacements.WithLabelValues("dropped").Add(float64(n))
		return
	}
	p.m.sharedPlacements.WithLabelValues("sent").Add(float64(n))
}

// sharePolicy makes the policy of model share its placements, when it can
// and the balancer gossips.
func (b *Balancer) sharePolicy(model string, pol route.Policy) {
	s, ok := pol.(route.Sharer)
	if !ok || b.sharer == nil {
		return
	}
	s.ShareTo(func(sh route.Shared) { b.sharer.add(model, sh) })
}

// shareModels makes the configured models' policies share their placements
// (a no-op before the gossip node exists).
func (b *Balancer) shareModels(ms *models) {
	for _, m := range ms.byKey {
		b.sharePolicy(m.cfg.Name, m.policy)
	}
}

// learnPlacements records another balancer's placements in this balancer's
// policies (the gossip's placement handler).
func (b *Balancer) learnPlacements(from string, body []byte, now time.Time) error {
	ms := b.live.Load().models
	var model string
	var pol route.Sharer
	looked := false
	return decodePlacements(body, func(name string, s route.Shared) {
		if !looked || name != model {
			model, looked = name, true
			pol, _ = ms.policyOf(name).(route.Sharer)
		}
		if pol == nil {
			b.m.sharedPlacements.WithLabelValues("unknown_model").Inc()
			return
		}
		pol.Learn(s, now)
		b.m.sharedPlacements.WithLabelValues("learned").Inc()
	})
}
