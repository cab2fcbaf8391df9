package gossip

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	gometrics "github.com/hashicorp/go-metrics"
	"github.com/hashicorp/memberlist"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/load"
	"github.com/inferrail/inferrail/internal/ratelog"
	"github.com/prometheus/client_golang/prometheus"
)

// SummarySource is what a sidecar's node disseminates: *summary.Builder
// implements it. Methods are called from the node's goroutines.
type SummarySource interface {
	// Flush returns pending deltas, or newEpoch = true when a rebuild began
	// (the node then sends a snapshot to every balancer).
	Flush() (deltas [][]byte, newEpoch bool)
	// EncodeSnapshot returns the encoded summary at the current version; the node
	// does not modify it.
	EncodeSnapshot() []byte
	// Version returns the current epoch and sequence.
	Version() (epoch, seq uint64)
}

var _ SummarySource = (*summary.Builder)(nil)

// Node is one member of the gossip cluster. New binds and creates the
// memberlist; Run joins, disseminates and, when its context ends, leaves and
// shuts down.
type Node struct {
	cfg   Config
	log   *slog.Logger
	warn  *ratelog.Logger // for what peers can cause once per message
	m     *metrics
	ml    *memberlist.Memberlist
	peers *Peers

	metaMu    sync.Mutex    // serializes UpdateMeta
	metaDirty chan struct{} // signals metaLoop
	meta      atomic.Pointer[Meta]
	metaEnc   atomic.Pointer[[]byte]
	load      atomic.Pointer[load.Report]
	src       atomic.Pointer[sourceBox]

	inbox chan []byte

	// onPlacements handles another balancer's placements (nil: dropped).
	onPlacements atomic.Pointer[BalancerHandler]
	// onLoad handles another balancer's load (nil: dropped).
	onLoad atomic.Pointer[BalancerHandler]
	// otherBalancers is OtherBalancers, counted by countMembers.
	otherBalancers atomic.Int32

	snapMu      sync.Mutex           // protects snapPending
	snapPending map[string]bool      // node name → forced (new epoch)
	snapWake    chan struct{}        // signals the snapshot sender
	snapSentAt  map[string]time.Time // sender goroutine only

	lifeMu   sync.Mutex // protects left and shut
	left     bool
	shut     bool
	stopped  chan struct{} // closed by Shutdown
	runStart atomic.Bool

	joining  atomic.Bool // during the first join (see conflicts)
	conflict chan error  // a name conflict found while joining
}

type sourceBox struct{ s SummarySource }

// New validates cfg, binds the transport and creates the memberlist (the node
// is alone until Run joins). log and reg may be nil.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Node, error) {
	if cfg.NodeName == "" {
		cfg.NodeName = DefaultNodeName(cfg.BindPort)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gossip: %w", err)
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("node", cfg.NodeName)
	n := &Node{
		cfg:         cfg,
		log:         log,
		warn:        ratelog.New(log, logEvery),
		inbox:       make(chan []byte, cfg.InboxSize),
		snapPending: make(map[string]bool),
		snapWake:    make(chan struct{}, 1),
		metaDirty:   make(chan struct{}, 1),
		snapSentAt:  make(map[string]time.Time),
		stopped:     make(chan struct{}),
		conflict:    make(chan error, 1),
	}
	meta := cfg.Meta
	meta.Role = cfg.Role
	enc, err := meta.Marshal()
	if err != nil {
		return nil, fmt.Errorf("gossip: %w", err)
	}
	n.meta.Store(&meta)
	n.metaEnc.Store(&enc)
	n.load.Store(&load.Report{})
	n.m = newMetrics(func() float64 { return float64(n.ml.GetHealthScore()) })
	n.peers = newPeers(cfg, n.countMembers)

	mc := cfg.memberlistConfig()
	mc.Logger = newStdLogger(log)
	installSink()
	labels := []gometrics.Label{{Name: nodeLabel, Value: cfg.NodeName}}
	mc.MetricLabels = labels
	globalSink.nodes.Store(cfg.NodeName, n.m)
	mc.Delegate = delegate{n}
	mc.Events = events{n}
	mc.Conflict = conflicts{n}
	tr := cfg.Transport
	if tr == nil {
		nt, err := newNetTransport(cfg.BindAddr, cfg.BindPort, mc.Logger.Printf)
		if err != nil {
			globalSink.nodes.CompareAndDelete(cfg.NodeName, n.m)
			return nil, fmt.Errorf("gossip: listen on %s:%d: %w", cfg.BindAddr, cfg.BindPort, err)
		}
		if cfg.BindPort == 0 {
			mc.BindPort = nt.Port()
			if cfg.AdvertisePort == 0 {
				mc.AdvertisePort = mc.BindPort
			}
		}
		tr = nt
	}
	ct := newCountingTransport(tr, n.m)
	mc.Transport = ct
	ml, err := memberlist.Create(mc)
	if err != nil {
		_ = ct.Shutdown()
		globalSink.nodes.CompareAndDelete(cfg.NodeName, n.m)
		return nil, fmt.Errorf("gossip: create memberlist: %w", err)
	}
	n.ml = ml
	if reg != nil {
		if err := n.m.register(reg); err != nil {
			_ = n.Shutdown()
			return nil, fmt.Errorf("gossip: %w", err)
		}
	}
	return n, nil
}

// Name returns the node's name.
func (n *Node) Name() string { return n.cfg.NodeName }

// Addr returns the address other nodes use to reach this one (host:port), for
// use as a join seed.
func (n *Node) Addr() string { return n.ml.LocalNode().Address() }

// Peers returns the members of the cluster as this node sees them.
func (n *Node) Peers() *Peers { return n.peers }

// SetLoad sets the load a sidecar announces from the next tick on.
func (n *Node) SetLoad(l load.Report) { n.load.Store(&l) }

// SetSummarySource sets what a sidecar disseminates, and puts its epoch in
// the node's metadata; nil stops summaries.
func (n *Node) SetSummarySource(s SummarySource) {
	if s == nil {
		n.src.Store(nil)
		return
	}
	n.src.Store(&sourceBox{s: s})
	n.epochChanged(s)
}

// Meta returns the node's current metadata.
func (n *Node) Meta() Meta { return *n.meta.Load() }

// SetMeta replaces the node's metadata and gossips it. Role is kept, and so
// is SummaryEpoch while a summary source is set (the node maintains it).
func (n *Node) SetMeta(m Meta) error {
	return n.UpdateMeta(func(cur *Meta) {
		epoch := cur.SummaryEpoch
		*cur = m
		if n.src.Load() != nil {
			cur.SummaryEpoch = epoch
		}
	})
}

// UpdateMeta changes the node's metadata with f, atomically with respect to
// other updates. f gets a copy it may modify; Role is restored after it. It
// does not wait: Run gossips the new metadata in the background.
func (n *Node) UpdateMeta(f func(*Meta)) error {
	n.metaMu.Lock()
	defer n.metaMu.Unlock()
	m := *n.meta.Load()
	m.Models = slices.Clone(m.Models)
	f(&m)
	m.Role = n.cfg.Role
	enc, err := m.Marshal()
	if err != nil {
		return fmt.Errorf("gossip: set meta: %w", err)
	}
	n.meta.Store(&m)
	n.metaEnc.Store(&enc)
	select {
	case n.metaDirty <- struct{}{}:
	default: // an update is already pending; it will read the latest
	}
	return nil
}

// metaLoop gossips metadata changes. memberlist's UpdateNode blocks until
// the alive message is broadcast, so it runs here, never under a lock or on
// the dissemination path.
func (n *Node) metaLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.metaDirty:
		}
		if err := n.ml.UpdateNode(n.cfg.LeaveTimeout); err != nil {
			// The new metadata is in place; push/pull and later alive
			// messages carry it even if this broadcast was slow.
			n.log.Debug("metadata broadcast not confirmed", "err", err)
		}
	}
}

// Run joins the seeds (retrying with backoff, resolving DNS names again each
// time, and rejoining whenever the node finds itself alone), sends
// announcements and summaries, and processes received messages. When ctx ends
// it leaves the cluster, shuts down and returns nil. Run may be called once.
func (n *Node) Run(ctx context.Context) error {
	if !n.runStart.CompareAndSwap(false, true) {
		return errors.New("gossip: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.joining.Store(len(n.cfg.Join) > 0)
	var wg sync.WaitGroup
	wg.Go(func() { n.processLoop(ctx) })
	wg.Go(func() { n.tickLoop(ctx) })
	wg.Go(func() { n.snapshotLoop(ctx) })
	wg.Go(func() { n.joinLoop(ctx) })
	wg.Go(func() { n.metaLoop(ctx) })
	select {
	case <-ctx.Done():
		if err := n.Leave(); err != nil {
			n.log.Warn("leave failed", "err", err)
		}
	case <-n.stopped:
	case err := <-n.conflict:
		// Neither leave nor say goodbye: both would speak for the
		// member that owns the name.
		n.log.Error("refusing to run", "err", err)
		cancel()
		wg.Wait()
		_ = n.Shutdown()
		return err
	}
	cancel()
	wg.Wait()
	return n.Shutdown()
}

// Leave tells the cluster this node is going away, waiting up to
// LeaveTimeout for the broadcast. It is idempotent, and a no-op after
// Shutdown. The node keeps running until Shutdown.
func (n *Node) Leave() error {
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	if n.left || n.shut {
		return nil
	}
	n.left = true
	// Say goodbye first: memberlist's leave callback cannot tell a leave
	// from a failure.
	bye := marshalLeave(n.cfg.NodeName)
	s := n.peers.View()
	for i := range s.Members {
		if m := &s.Members[i]; !m.Self && m.Status == StatusAlive {
			n.sendBestEffort(&m.ml, msgLeave, bye)
		}
	}
	if err := n.ml.Leave(n.cfg.LeaveTimeout); err != nil {
		return fmt.Errorf("gossip: leave: %w", err)
	}
	return nil
}

// Shutdown stops the node at once, without leaving: other members will
// detect it as failed unless Leave was called first. It is idempotent and
// makes Run return.
func (n *Node) Shutdown() error {
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	if n.shut {
		return nil
	}
	n.shut = true
	close(n.stopped)
	defer globalSink.nodes.CompareAndDelete(n.cfg.NodeName, n.m)
	if err := n.ml.Shutdown(); err != nil {
		return fmt.Errorf("gossip: shutdown: %w", err)
	}
	return nil
}

func (n *Node) joinLoop(ctx context.Context) {
	if len(n.cfg.Join) == 0 {
		return
	}
	wait := n.cfg.JoinRetryMin
	for {
		if n.ml.NumMembers() <= 1 {
			joined, err := n.ml.Join(n.cfg.Join)
			if err != nil {
				n.log.Warn("join failed", "seeds", n.cfg.Join, "retry_in", wait, "err", err)
				wait = min(2*wait, n.cfg.JoinRetryMax)
			} else if len(n.conflict) == 0 {
				n.joining.Store(false)
				n.log.Info("joined", "contacted", joined, "members", n.ml.NumMembers())
				wait = n.cfg.JoinRetryMin
			}
		}
		// Jitter so a fleet restarted at once does not retry in lockstep.
		d := wait/2 + rand.N(wait/2+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// countMembers updates the members gauge and the count of other alive
// balancers from a new snapshot.
func (n *Node) countMembers(s *PeersView) {
	n.m.members.Reset()
	others := 0
	for i := range s.Members {
		m := &s.Members[i]
		n.m.members.WithLabelValues(m.Meta.Role.String(), m.Status.String()).Inc()
		if !m.Self && m.Status == StatusAlive && m.Meta.Role == RoleBalancer {
			others++
		}
	}
	n.otherBalancers.Store(int32(others))
}

// OtherBalancers returns the number of other alive balancers in the last
// membership snapshot: where it is 0, a balancer has nobody to send its
// placements and load to (SendPlacements, SendLoad) and need not build them.
func (n *Node) OtherBalancers() int { return int(n.otherBalancers.Load()) }

// delegate adapts Node to memberlist.Delegate.
type delegate struct{ n *Node }

var _ memberlist.Delegate = delegate{}

// NodeMeta implements memberlist.Delegate.
func (d delegate) NodeMeta(limit int) []byte {
	b := *d.n.metaEnc.Load()
	if len(b) > limit {
		d.n.log.Error("node metadata over memberlist's limit", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}

// NotifyMsg implements memberlist.Delegate: it copies the message and queues
// it without blocking, dropping it when the queue is full.
func (d delegate) NotifyMsg(b []byte) {
	if len(b) == 0 {
		return
	}
	select {
	case d.n.inbox <- append([]byte(nil), b...):
	default:
		d.n.m.inboxDropped.Inc()
	}
}

// GetBroadcasts implements memberlist.Delegate; the node sends its messages
// directly (see the package doc), not through memberlist's broadcast queue.
func (delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState implements memberlist.Delegate; there is no push/pull state.
func (delegate) LocalState(join bool) []byte { return nil }

// MergeRemoteState implements memberlist.Delegate.
func (delegate) MergeRemoteState(buf []byte, join bool) {}

// events adapts Node to memberlist.EventDelegate. Calls come with
// memberlist's locks held: they only update Peers.
type events struct{ n *Node }

var _ memberlist.EventDelegate = events{}

func (e events) meta(node *memberlist.Node) Meta {
	m, err := UnmarshalMeta(node.Meta)
	if err != nil {
		e.n.warn.Warn("bad node metadata", "member", node.Name, "err", err)
	}
	return m
}

// NotifyJoin implements memberlist.EventDelegate.
func (e events) NotifyJoin(node *memberlist.Node) {
	e.n.peers.upsert(node, e.meta(node), time.Now())
	e.n.log.Debug("member joined", "member", node.Name, "addr", node.Address())
}

// NotifyUpdate implements memberlist.EventDelegate.
func (e events) NotifyUpdate(node *memberlist.Node) {
	e.n.peers.upsert(node, e.meta(node), time.Now())
}

// NotifyLeave implements memberlist.EventDelegate.
func (e events) NotifyLeave(node *memberlist.Node) {
	st := e.n.peers.remove(node.Name, time.Now())
	e.n.log.Info("member gone", "member", node.Name, "status", st.String())
}
