package gossip

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/inferrail/inferrail/gossip/summary"
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

// LoadReport is the last load a sidecar announced.
type LoadReport struct {
	Load Load
	// SentAt is the sender's clock at sending; ReceivedAt this node's clock
	// on receipt (ages are measured from ReceivedAt).
	SentAt, ReceivedAt time.Time
	// Epoch and Seq are the summary version the sidecar announced.
	Epoch, Seq uint64
}

// peer is the mutable, per-name state behind Members: load and summary are
// updated in place (atomically) so snapshots need not be rebuilt ten times a
// second per sidecar.
type peer struct {
	name string
	load atomic.Pointer[LoadReport]
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

// Member is one node in a FleetSnapshot. Its identity, metadata and status
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

// Load returns the last load report and whether it is fresh (received within
// LoadMaxAge of now). ok is false when nothing was received.
func (m *Member) Load(now time.Time) (r LoadReport, fresh, ok bool) {
	lr := m.p.load.Load()
	if lr == nil {
		return LoadReport{}, false, false
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

// FleetSnapshot is an immutable list of members, sorted by name.
type FleetSnapshot struct {
	// Self is the local node's name.
	Self    string
	Members []Member
}

// Member returns the member with the given name, or nil.
func (s *FleetSnapshot) Member(name string) *Member {
	i, ok := slices.BinarySearchFunc(s.Members, name, func(m Member, n string) int { return strings.Compare(m.Name, n) })
	if !ok {
		return nil
	}
	return &s.Members[i]
}

// Fleet is a node's view of the cluster. Snapshot is lock-free; updates come
// from the node's memberlist callbacks and its processing goroutine.
type Fleet struct {
	self          string
	loadMaxAge    time.Duration
	summaryMaxAge time.Duration
	retention     time.Duration

	mu       sync.Mutex // protects members and peers
	members  map[string]Member
	peers    map[string]*peer
	snap     atomic.Pointer[FleetSnapshot]
	onChange func(*FleetSnapshot)
}

func newFleet(cfg Config, onChange func(*FleetSnapshot)) *Fleet {
	f := &Fleet{
		self:          cfg.NodeName,
		loadMaxAge:    cfg.LoadMaxAge,
		summaryMaxAge: cfg.SummaryMaxAge,
		retention:     cfg.MemberRetention,
		members:       make(map[string]Member),
		peers:         make(map[string]*peer),
		onChange:      onChange,
	}
	f.snap.Store(&FleetSnapshot{Self: cfg.NodeName})
	return f
}

// Snapshot returns the current members. It never blocks.
func (f *Fleet) Snapshot() *FleetSnapshot { return f.snap.Load() }

// upsert records a member as alive with new metadata (join or update).
func (f *Fleet) upsert(n *memberlist.Node, meta Meta, now time.Time) {
	name := n.Name
	f.mu.Lock()
	defer f.mu.Unlock()
	old, had := f.members[name]
	p := f.peers[name]
	if p == nil {
		p = &peer{name: name}
		f.peers[name] = p
	}
	m := Member{Name: name, Addr: n.Address(), Meta: meta, ml: memberlist.Node{Name: n.Name, Addr: n.Addr, Port: n.Port}, Status: StatusAlive, StatusSince: now, Self: name == f.self,
		p: p, loadMaxAge: f.loadMaxAge, summaryMaxAge: f.summaryMaxAge}
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
	f.members[name] = m
	f.publishLocked()
}

// leaveGrace is how long after a member announced its leave its departure
// counts as leaving rather than failing.
const leaveGrace = 30 * time.Second

// remove marks a member left (if it announced its leave) or dead, and drops
// its summary and load. It returns the new status.
func (f *Fleet) remove(name string, now time.Time) Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.members[name]
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
	f.members[name] = m
	f.publishLocked()
	return st
}

// leftLate marks left a member marked dead less than leaveGrace ago, when
// its leave message comes after memberlist's notice of its departure: it
// reports whether it did. memberlist's packet handler takes queued messages
// last in, first out, so the dead message a leaving node broadcasts is often
// handled before the leave message it sent just ahead of it
// (TestLeaveIsGraceful saw the node dead about once in 20 runs).
func (f *Fleet) leftLate(name string, now time.Time) bool {
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
func (f *Fleet) expire(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := false
	for name, m := range f.members {
		if m.Status != StatusAlive && now.Sub(m.StatusSince) > f.retention {
			delete(f.members, name)
			delete(f.peers, name)
			changed = true
		}
	}
	if changed {
		f.publishLocked()
	}
}

// alive returns the alive member with the given name, or nil.
func (f *Fleet) alive(name string) *Member {
	m := f.snap.Load().Member(name)
	if m == nil || m.Status != StatusAlive {
		return nil
	}
	return m
}

func (f *Fleet) publishLocked() {
	s := &FleetSnapshot{Self: f.self, Members: make([]Member, 0, len(f.members))}
	for _, m := range f.members {
		s.Members = append(s.Members, m)
	}
	slices.SortFunc(s.Members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	f.snap.Store(s)
	if f.onChange != nil {
		f.onChange(s)
	}
}
