package fleet

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/internal/load"
)

// Load shared between balancers (docs/routing.md#the-load-model). A
// replica's load report comes from its sidecar, up to a gossip period old,
// and a response's report reaches only the balancer it answers:
// with several balancers, each saw the others' requests of the last period
// only once a report counted them, and sent the next ones to a replica the
// others had just filled. So each balancer also sends its own exact counts
// (route.Counters) to the others as they change (ShareLoad), and each
// counts the others' as they sent them in place of their shares in the
// report (LearnLoad, Candidates).

// maxPeers bounds the balancers whose load a fleet keeps.
const maxPeers = 1024

// peer is another balancer whose load this one has received.
type peer struct {
	name  string
	seq   uint64       // the last message number taken (LearnLoad only)
	heard atomic.Int64 // when its last message arrived, Unix nanoseconds
}

// fresh reports whether p was heard from within maxAge of now.
func (p *peer) fresh(now time.Time, maxAge time.Duration) bool {
	return now.UnixNano()-p.heard.Load() <= int64(maxAge)
}

// peerWork is a peer's work on a replica as it last sent it, and its
// followed answers there (At: when the message arrived).
type peerWork struct {
	from    *peer
	w       route.Work
	answers []route.PeerAnswer
}

// peerState is the fleet's record of the other balancers' load.
type peerState struct {
	mu    sync.Mutex // protects names
	names map[string]*peer
	// list is the peers, for Candidates to read without the lock.
	list atomic.Pointer[[]*peer]
	wake chan struct{} // a replica's counts changed (ShareLoad)
}

// peerLoad returns the fresh peers' work on r at now.
func (r *Replica) peerLoad(now time.Time, maxAge time.Duration) route.Work {
	r.peersMu.Lock()
	defer r.peersMu.Unlock()
	var sum route.Work
	for i := range r.peers {
		if p := &r.peers[i]; p.from.fresh(now, maxAge) {
			sum.Add(p.w)
		}
	}
	return sum
}

// AppendPeerAnswers appends to dst the followed answers on r of the other
// balancers heard from within the gossip's load_max_age of now, as they last
// sent them (route.PeerAnswers).
func (r *Replica) AppendPeerAnswers(dst []route.PeerAnswer, now time.Time) []route.PeerAnswer {
	r.peersMu.Lock()
	defer r.peersMu.Unlock()
	for i := range r.peers {
		if p := &r.peers[i]; p.from.fresh(now, r.peerMaxAge) {
			dst = append(dst, p.answers...)
		}
	}
	return dst
}

var _ route.PeerAnswers = (*Replica)(nil)

// setPeer records p's work and answers on r (zero work: removes it). The
// answers are r's from then on.
func (r *Replica) setPeer(p *peer, w route.Work, answers []route.PeerAnswer) {
	r.peersMu.Lock()
	defer r.peersMu.Unlock()
	for i := range r.peers {
		if r.peers[i].from == p {
			if w.InFlight == 0 && w.OutputReserve == 0 {
				r.peers = append(r.peers[:i], r.peers[i+1:]...)
			} else {
				r.peers[i].w, r.peers[i].answers = w, answers
			}
			return
		}
	}
	if w.InFlight > 0 || w.OutputReserve > 0 {
		r.peers = append(r.peers, peerWork{from: p, w: w, answers: answers})
	}
}

// fresh appends to dst[:0] the peers heard from within maxAge of now.
func (ps *peerState) fresh(now time.Time, maxAge time.Duration, dst []*peer) []*peer {
	dst = dst[:0]
	if l := ps.list.Load(); l != nil {
		for _, p := range *l {
			if p.fresh(now, maxAge) {
				dst = append(dst, p)
			}
		}
	}
	return dst
}

// LearnLoad records another balancer's load, a body it sent with
// gossip.Node.SendLoad, received at now (the gossip's load handler). A
// message older than one already taken from the same balancer is dropped;
// a malformed one returns an error and changes nothing.
func (f *Fleet) LearnLoad(from string, body []byte, now time.Time) error {
	var recs []peerRecord
	flags, seq, err := decodePeerLoad(body, now, func(r peerRecord) { recs = append(recs, r) })
	if err != nil {
		return err
	}
	ps := &f.peers
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.names[from]
	if p == nil {
		if len(ps.names) >= maxPeers {
			f.prunePeersLocked(now)
			if len(ps.names) >= maxPeers {
				return nil
			}
		}
		p = &peer{name: from}
		ps.names[from] = p
		ps.publishLocked()
	} else if seq <= p.seq {
		return nil
	}
	p.seq = seq
	p.heard.Store(now.UnixNano())
	snap := f.snap.Load()
	if flags&peerFlagReset != 0 {
		for _, r := range snap.Replicas {
			r.setPeer(p, route.Work{}, nil)
		}
	}
	for _, rec := range recs {
		if r := snap.byKey[rec.replica]; r != nil {
			for i := range rec.answers {
				rec.answers[i].At = now
			}
			r.setPeer(p, rec.w, rec.answers)
		}
	}
	return nil
}

// prunePeersLocked forgets the peers not heard from for ten load max ages.
func (f *Fleet) prunePeersLocked(now time.Time) {
	ps := &f.peers
	for name, p := range ps.names {
		if !p.fresh(now, 10*f.cfg.LoadMaxAge) {
			delete(ps.names, name)
			for _, r := range f.snap.Load().Replicas {
				r.setPeer(p, route.Work{}, nil)
			}
		}
	}
	ps.publishLocked()
}

func (ps *peerState) publishLocked() {
	l := make([]*peer, 0, len(ps.names))
	for _, p := range ps.names {
		l = append(l, p)
	}
	ps.list.Store(&l)
}

// watch makes r's counts wake ShareLoad when they change.
func (f *Fleet) watch(r *Replica) {
	r.Counters.Watch(func() {
		if !r.changed.Swap(true) {
			select {
			case f.peers.wake <- struct{}{}:
			default:
			}
		}
	})
}

// ShareLoad sends this balancer's own counts on each replica to the other
// balancers with send (gossip.Node.SendLoad) until ctx ends: the replicas
// whose counts changed, at once after a change (what changes while a message
// goes out goes in the next), and every replica it has work on each period,
// in a round whose first message resets what the others hold of it. While
// others (gossip.Node.OtherBalancers) is 0 it sends nothing; a balancer that
// appears gets everything at the next period.
func (f *Fleet) ShareLoad(ctx context.Context, send func(body []byte) error, others func() int, period time.Duration) error {
	t := time.NewTicker(period)
	defer t.Stop()
	s := loadSender{send: send, log: f.log.Warn, seq: uint64(f.now().UnixNano()), answers: true}
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.peers.wake:
			if others() == 0 {
				continue
			}
			// At most one message of changes per shareLoadGap: under
			// heavy traffic the changes of a gap go out together.
			if d := shareLoadGap - time.Since(last); d > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(d):
				}
			}
			s.round(f.snap.Load(), f.now(), false)
		case <-t.C:
			if others() == 0 {
				continue
			}
			s.round(f.snap.Load(), f.now(), true)
		}
		last = time.Now()
	}
}

// shareLoadGap is the least time between two messages of changes
// (ShareLoad): a change waits at most this long to go out, and a balancer
// sends at most a thousand such messages a second to each other one.
const shareLoadGap = time.Millisecond

// loadSender encodes and sends one balancer's load messages (ShareLoad).
type loadSender struct {
	send func(body []byte) error
	log  func(msg string, args ...any)
	seq  uint64
	msg  []byte
	n    int // records in msg
	// answers: the records carry the followed answers (peerFlagAnswers).
	answers bool
	rec     []byte             // one record, encoded
	ans     []route.PeerAnswer // one replica's answers
	// reset: the message under way is the first of a reset round.
	reset bool
}

// round sends the replicas of snap that changed since the last round, or,
// with all, every replica this balancer has work on, after a reset.
func (s *loadSender) round(snap *Snapshot, now time.Time, all bool) {
	s.reset = all
	s.start()
	for _, r := range snap.Replicas {
		changed := r.changed.Swap(false)
		w := r.Counters.Snapshot()
		if !changed && (!all || w.InFlight == 0 && w.OutputReserve == 0) {
			continue
		}
		s.rec = appendPeerRecord(s.rec[:0], replicaKey(r.ID), w, now)
		if s.answers {
			s.ans = r.Counters.AppendAnswers(s.ans[:0], w.InFlight)
			s.rec = appendPeerAnswers(s.rec, s.ans, w.InFlight)
		}
		if s.n > 0 && len(s.msg)+len(s.rec) > gossip.MaxPlacementsBytes {
			s.flush()
			s.start()
		}
		s.msg = append(s.msg, s.rec...)
		s.n++
	}
	if s.n > 0 || all {
		s.flush()
	}
}

// One record, its answers included, always fits a message: a round never
// has a record it cannot send (this fails to compile otherwise).
var _ [gossip.MaxPlacementsBytes - peerHeaderMax - peerRecordMax]struct{}

// start begins a message; its header is written by flush.
func (s *loadSender) start() {
	s.msg = append(s.msg[:0], make([]byte, peerHeaderMax)...)
	s.n = 0
}

// flush writes the message's header in front of its records and sends it.
func (s *loadSender) flush() {
	s.seq++
	var h [peerHeaderMax]byte
	var flags byte
	if s.reset {
		flags |= peerFlagReset
		s.reset = false
	}
	if s.answers {
		flags |= peerFlagAnswers
	}
	hb := append(h[:0], flags)
	hb = binary.AppendUvarint(hb, s.seq)
	hb = binary.AppendUvarint(hb, uint64(s.n))
	body := s.msg[peerHeaderMax-len(hb):]
	copy(body, hb)
	if err := s.send(body); err != nil {
		s.log("share load", "err", err)
	}
}

// others returns the report's counts of every origin but this balancer and
// the fresh peers: the work the peers' own counts do not cover.
func others(rep *load.Report, origin string, fresh []*peer) route.Work {
	w := route.Work{InFlight: int(rep.InFlight), Pending: int(rep.Pending), PrefillTokens: rep.PrefillTokens}
	sub := func(s load.Share) {
		w.InFlight -= int(s.InFlight)
		w.Pending -= int(s.Pending)
		w.PrefillTokens -= s.PrefillTokens
	}
	sub(rep.Share(origin))
	for _, p := range fresh {
		sub(rep.Share(p.name))
	}
	w.InFlight, w.Pending, w.PrefillTokens = max(w.InFlight, 0), max(w.Pending, 0), max(w.PrefillTokens, 0)
	return w
}
