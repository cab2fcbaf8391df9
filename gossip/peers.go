package gossip

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/load"
)

// Status is a member's state as this node last saw it.
type Status uint8

// Member states. memberlist does not report "suspect" through its callbacks,
// so a suspect member stays Alive until it is declared dead.
const (
	StatusAlive Status = 1
	StatusLeft  Status = 2 // left on purpose
	StatusDead  Status = 3 // failed: stopped answering probes
)

// String returns the status's name.
func (s Status) String() string {
	switch s {
	case StatusAlive:
		return "alive"
	case StatusLeft:
		return "left"
	case StatusDead:
		return "dead"
	default:
		return "unknown"
	}
}

// MarshalText implements encoding.TextMarshaler (JSON shows the name).
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Announcement is the last announcement a sidecar sent: its load report as
// it wrote it, and when it was sent and received.
type Announcement struct {
	Load load.Report
	// SentAt is the sender's clock at sending; ReceivedAt this node's clock
	// on receipt (ages are measured from ReceivedAt).
	SentAt, ReceivedAt time.Time
	// Epoch and Seq are the summary version the sidecar announced.
	Epoch, Seq uint64
}

// peer is the mutable, per-name state behind Members: load and summary are
// updated in place (atomically) so views need not be rebuilt ten times a
// second per sidecar.
type peer struct {
	name string
	load atomic.Pointer[Announcement]
	view summary.View
	// confirmedAt (Unix nanoseconds) is when the view was last known to be
	// current: a summary message applied, or an announcement matching it.
	confirmedAt atomic.Int64
	// leavingAt (Unix nanoseconds) is when the member said it was leaving.
	leavingAt atomic.Int64

	// Touched only by the node's processing goroutine:
	behindSince time.Time          // first announcement ahead of the view
	lastResync  time.Time          // last resync request sent
	early       map[version][]byte // deltas ahead of the view
}

// Member is one node in a PeersView. Its identity, metadata and status
// are immutable; Load and Summary read the latest values atomically.
type Member struct {
	Name string
	// Addr is the memberlist address (host:port).
	Addr        string
	Meta        Meta
	Status      Status
	StatusSince time.Time
	// Self reports whether this member is the local node.
	Self bool

	ml            memberlist.Node // address for sending, without metadata
	p             *peer
	loadMaxAge    time.Duration
	summaryMaxAge time.Duration
}

// Role returns the member's role from its metadata.
func (m *Member) Role() Role { return m.Meta.Role }

// Load returns the last announcement and whether its load is fresh (received
// within LoadMaxAge of now). ok is false when nothing was received.
func (m *Member) Load(now time.Time) (a Announcement, fresh, ok bool) {
	lr := m.p.load.Load()
	if lr == nil {
		return Announcement{}, false, false
	}
	return *lr, m.Status == StatusAlive && now.Sub(lr.ReceivedAt) <= m.loadMaxAge, true
}

// Summary returns the member's summary view and whether it can be trusted: a
// snapshot was received and the view was confirmed current within
// SummaryMaxAge. A stale view must not be used for routing.
func (m *Member) Summary(now time.Time) (v *summary.View, fresh bool) {
	in := m.p.view.Info()
	if !in.Valid || m.Status != StatusAlive {
		return &m.p.view, false
	}
	return &m.p.view, now.Sub(m.SummaryConfirmedAt()) <= m.summaryMaxAge
}

// SummaryConfirmedAt returns when the summary view was last known current.
func (m *Member) SummaryConfirmedAt() time.Time {
	ns := m.p.confirmedAt.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// PeersView is an immutable list of members, sorted by name.
type PeersView struct {
	// Self is the local node's name.
	Self    string
	Members []Member
}

// Member returns the member with the given name, or nil.
func (s *PeersView) Member(name string) *Member {
	i, ok := slices.BinarySearchFunc(s.Members, name, func(m Member, n string) int { return strings.Compare(m.Name, n) })
	if !ok {
		return nil
	}
	return &s.Members[i]
}

// Peers is the members of the cluster as a node sees them: identity, metadata,
// status and each one's last load and summary view. View is lock-free; updates
// come from the node's memberlist callbacks and its processing goroutine.
type Peers struct {
	self          string
	loadMaxAge    time.Duration
	summaryMaxAge time.Duration
	retention     time.Duration

	mu       sync.Mutex // protects members and peers
	members  map[string]Member
	peers    map[string]*peer
	cur      atomic.Pointer[PeersView]
	onChange func(*PeersView)
}

func newPeers(cfg Config, onChange func(*PeersView)) *Peers {
	ps := &Peers{
		self:          cfg.NodeName,
		loadMaxAge:    cfg.LoadMaxAge,
		summaryMaxAge: cfg.SummaryMaxAge,
		retention:     cfg.MemberRetention,
		members:       make(map[string]Member),
		peers:         make(map[string]*peer),
		onChange:      onChange,
	}
	ps.cur.Store(&PeersView{Self: cfg.NodeName})
	return ps
}

// View returns the current members. It never blocks.
func (ps *Peers) View() *PeersView { return ps.cur.Load() }

// upsert records a member as alive with new metadata (join or update).
func (ps *Peers) upsert(n *memberlist.Node, meta Meta, now time.Time) {
	name := n.Name
	ps.mu.Lock()
	defer ps.mu.Unlock()
	old, had := ps.members[name]
	p := ps.peers[name]
	if p == nil {
		p = &peer{name: name}
		ps.peers[name] = p
	}
	m := Member{Name: name, Addr: n.Address(), Meta: meta, ml: memberlist.Node{Name: n.Name, Addr: n.Addr, Port: n.Port}, Status: StatusAlive, StatusSince: now, Self: name == ps.self,
		p: p, loadMaxAge: ps.loadMaxAge, summaryMaxAge: ps.summaryMaxAge}
	if had && old.Status == StatusAlive {
		m.StatusSince = old.StatusSince
	} else {
		// A (re)joined member starts with an empty summary: its previous
		// life's filter may hold blocks its engine no longer has.
		p.view.Reset()
		p.confirmedAt.Store(0)
		p.load.Store(nil)
		p.leavingAt.Store(0)
		// p.early belongs to the processing goroutine; stale entries there
		// fail the epoch check and are dropped on the next snapshot.
	}
	ps.members[name] = m
	ps.publishLocked()
}

// leaveGrace is how long after a member announced its leave its departure
// counts as leaving rather than failing.
const leaveGrace = 30 * time.Second

// remove marks a member left (if it announced its leave) or dead, and drops
// its summary and load. It returns the new status.
func (ps *Peers) remove(name string, now time.Time) Status {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	m, ok := ps.members[name]
	if !ok {
		return 0
	}
	st := StatusDead
	if at := m.p.leavingAt.Load(); at != 0 && now.Sub(time.Unix(0, at)) < leaveGrace {
		st = StatusLeft
	}
	m.Status, m.StatusSince = st, now
	m.p.view.Reset()
	m.p.confirmedAt.Store(0)
	m.p.load.Store(nil)
	ps.members[name] = m
	ps.publishLocked()
	return st
}

// leftLate marks left a member marked dead less than leaveGrace ago, when
// its leave message comes after memberlist's notice of its departure: it
// reports whether it did. memberlist's packet handler takes queued messages
// last in, first out, so the dead message a leaving node broadcasts is often
// handled before the leave message it sent just ahead of it
// (TestLeaveIsGraceful saw the node dead about once in 20 runs).
func (f *Peers) leftLate(name string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.members[name]
	if !ok || m.Self || m.Status != StatusDead || now.Sub(m.StatusSince) >= leaveGrace {
		return false
	}
	m.Status = StatusLeft
	f.members[name] = m
	f.publishLocked()
	return true
}

// expire forgets members that have been dead or gone longer than retention.
func (ps *Peers) expire(now time.Time) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	changed := false
	for name, m := range ps.members {
		if m.Status != StatusAlive && now.Sub(m.StatusSince) > ps.retention {
			delete(ps.members, name)
			delete(ps.peers, name)
			changed = true
		}
	}
	if changed {
		ps.publishLocked()
	}
}

// alive returns the alive member with the given name, or nil.
func (ps *Peers) alive(name string) *Member {
	m := ps.cur.Load().Member(name)
	if m == nil || m.Status != StatusAlive {
		return nil
	}
	return m
}

func (ps *Peers) publishLocked() {
	s := &PeersView{Self: ps.self, Members: make([]Member, 0, len(ps.members))}
	for _, m := range ps.members {
		s.Members = append(s.Members, m)
	}
	slices.SortFunc(s.Members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	ps.cur.Store(s)
	if ps.onChange != nil {
		ps.onChange(s)
	}
}
