package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/inferrail/inferrail/gossip"
)

// ReplicaDefaults are the caps given to replicas learned from the gossip.
type ReplicaDefaults struct {
	MaxConcurrency int `yaml:"max_concurrency"`
	MaxPending     int `yaml:"max_pending"`
	// CapacityBlocks is the KV capacity assumed for gossip replicas whose
	// sidecar does not advertise the engine's (0: unknown).
	CapacityBlocks int `yaml:"kv_capacity_blocks"`
}

// Config configures a Fleet.
type Config struct {
	// Static lists the replicas from the config file.
	Static []Spec
	// Defaults apply to replicas learned from the gossip.
	Defaults ReplicaDefaults
	// Health configures probes and ejection.
	Health HealthConfig
	// Origin is this balancer's name as its requests carry it to sidecars
	// (load.Origin): the share of a replica's load reported under it
	// is this balancer's own, which its exact counts replace.
	Origin string
	// LoadMaxAge is the gossip's load staleness limit (gossip.Config's
	// LoadMaxAge, the gossip.load_max_age key; default 1s). The gossip judges
	// its announcements by it; the fleet judges the load reports of
	// responses by the same limit, so one rule decides whether any report
	// is stale (route.Load.Stale).
	LoadMaxAge time.Duration
	// PollInterval is how often the gossip membership is checked for changes
	// (default 50ms).
	PollInterval time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// MemberSource is the gossip view: *gossip.Peers implements it.
type MemberSource interface {
	View() *gossip.PeersView
}

var _ MemberSource = (*gossip.Peers)(nil)

// Snapshot is an immutable view of the replicas; read it, never modify it.
type Snapshot struct {
	// Replicas lists every replica, sorted by ID.
	Replicas []*Replica
	// Models maps a model name to the replicas serving it.
	Models map[string]*ModelSet
	// ModelNames lists the keys of Models, sorted.
	ModelNames []string
	// byKey maps a replica's wire key (replicaKey) to it.
	byKey map[uint64]*Replica
}

// Replica returns the replica with the given ID, or nil.
func (s *Snapshot) Replica(id string) *Replica {
	i, ok := slices.BinarySearchFunc(s.Replicas, id, func(r *Replica, id string) int { return strings.Compare(r.ID, id) })
	if !ok {
		return nil
	}
	return s.Replicas[i]
}

// Fleet tracks the replicas. Snapshot never blocks; Run keeps the snapshot in
// step with the gossip and runs the health checks.
type Fleet struct {
	cfg    Config
	log    *slog.Logger
	m      *metrics
	src    MemberSource // nil: static replicas only
	prober Prober       // nil: no active probes

	mu       sync.Mutex // protects replicas, lastSrc and discovered
	replicas map[string]*Replica
	lastSrc  *gossip.PeersView
	// discovered holds the replicas of each DNS discovery group
	// (SetDiscovered), by group name.
	discovered map[string][]Spec

	ejectMu   sync.Mutex    // serializes ejection decisions
	readmit   chan struct{} // signals a new readmitAt
	readmitMu sync.Mutex    // protects readmitAt
	readmitAt time.Time     // earliest ejection end not yet seen by the health loop

	snap atomic.Pointer[Snapshot]

	// peers is the other balancers' load (peers.go).
	peers peerState
}

// New returns a fleet with the static replicas of cfg. src (the gossip view)
// and prober may be nil; log may be nil and reg nil.
func New(cfg Config, src MemberSource, prober Prober, log *slog.Logger, reg prometheus.Registerer) (*Fleet, error) {
	if err := cfg.Health.Validate("health"); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	ids := map[string]bool{}
	for _, s := range cfg.Static {
		if s.ID == "" || s.URL == nil {
			return nil, errors.New("fleet: a static replica needs an ID and a URL")
		}
		if ids[s.ID] {
			return nil, fmt.Errorf("fleet: duplicate replica %q", s.ID)
		}
		ids[s.ID] = true
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 50 * time.Millisecond
	}
	if cfg.LoadMaxAge <= 0 {
		cfg.LoadMaxAge = gossip.DefaultConfig().LoadMaxAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f := &Fleet{
		cfg: cfg, log: log, src: src, prober: prober,
		replicas:   make(map[string]*Replica),
		discovered: make(map[string][]Spec),
		readmit:    make(chan struct{}, 1),
		peers:      peerState{names: make(map[string]*peer), wake: make(chan struct{}, 1)},
	}
	f.m = newMetrics(reg, f)
	f.refresh()
	return f, nil
}

func (f *Fleet) now() time.Time { return f.cfg.Now() }

// Snapshot returns the current replicas. It never blocks.
func (f *Fleet) Snapshot() *Snapshot { return f.snap.Load() }

// Run follows the gossip membership and runs the health checks until ctx
// ends.
func (f *Fleet) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if f.src != nil {
		g.Go(func() error {
			t := time.NewTicker(f.cfg.PollInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-t.C:
					f.refresh()
				}
			}
		})
	}
	g.Go(func() error { return f.healthLoop(ctx) })
	return g.Wait()
}

// refresh rebuilds the snapshot if the gossip membership changed (or on the
// first call).
func (f *Fleet) refresh() {
	f.mu.Lock()
	defer f.mu.Unlock()
	var gs *gossip.PeersView
	if f.src != nil {
		gs = f.src.View()
		if gs == f.lastSrc && f.snap.Load() != nil {
			return
		}
	}
	f.lastSrc = gs
	f.rebuildLocked(gs)
}

// rebuildLocked builds and publishes a snapshot from the static replicas and
// the alive sidecars of gs. f.mu must be held.
func (f *Fleet) rebuildLocked(gs *gossip.PeersView) {
	type entry struct {
		spec   Spec
		member *gossip.Member
	}
	var specs []entry
	taken := make(map[string]bool, len(f.cfg.Static))
	for _, s := range f.cfg.Static {
		specs = append(specs, entry{spec: s})
		taken[s.ID] = true
	}
	for _, group := range slices.Sorted(maps.Keys(f.discovered)) {
		for _, s := range f.discovered[group] {
			if taken[s.ID] {
				f.log.Warn("discovered replica has the name of another replica; ignored", "replica", s.ID, "group", group)
				continue
			}
			specs = append(specs, entry{spec: s})
			taken[s.ID] = true
		}
	}
	if gs != nil {
		for i := range gs.Members {
			m := &gs.Members[i]
			if m.Self || m.Role() != gossip.RoleSidecar || m.Status != gossip.StatusAlive ||
				m.Meta.DataAddr == "" || len(m.Meta.Models) == 0 {
				continue
			}
			if taken[m.Name] {
				f.log.Warn("gossip member has the name of a static or discovered replica; ignored", "replica", m.Name)
				continue
			}
			d := f.cfg.Defaults
			capacity := d.CapacityBlocks
			if m.Meta.KVCapacityBlocks > 0 { // the engine's own figure, as its sidecar read it
				capacity = int(m.Meta.KVCapacityBlocks)
			}
			specs = append(specs, entry{member: m, spec: Spec{
				ID: m.Name, URL: &url.URL{Scheme: "http", Host: m.Meta.DataAddr}, H2C: true,
				Models: slices.Clone(m.Meta.Models), Adapters: m.Meta.Adapters, BlockSize: int(m.Meta.BlockSize),
				MaxConcurrency: d.MaxConcurrency, MaxPending: d.MaxPending, CapacityBlocks: capacity,
			}})
		}
	}
	next := make(map[string]*Replica, len(specs))
	snap := &Snapshot{Models: make(map[string]*ModelSet), byKey: make(map[uint64]*Replica, len(specs))}
	for _, e := range specs {
		r := f.replicas[e.spec.ID]
		if r == nil || !r.Spec.equal(&e.spec) {
			if r != nil && !r.Static {
				r.markDown()
			}
			r = newReplica(e.spec)
			r.peerMaxAge = f.cfg.LoadMaxAge
			f.watch(r)
			if e.member != nil {
				f.log.Info("replica joined", "replica", r.ID, "url", r.URL.String(), "models", r.Models)
			}
		}
		r.member.Store(e.member)
		next[r.ID] = r
		snap.byKey[replicaKey(r.ID)] = r
		snap.Replicas = append(snap.Replicas, r)
		for _, m := range r.Models {
			set := snap.Models[m]
			if set == nil {
				set = &ModelSet{Model: m, origin: f.cfg.Origin, loadMaxAge: f.cfg.LoadMaxAge, peers: &f.peers}
				snap.Models[m] = set
				snap.ModelNames = append(snap.ModelNames, m)
			}
			set.Replicas = append(set.Replicas, r)
		}
	}
	for id, r := range f.replicas {
		if next[id] != r {
			// A gossip replica that left is gone: requests waiting for its
			// first byte move on. A static replica removed or changed by a
			// reload, or a discovered one DNS no longer lists, is drained:
			// requests sent to it finish there.
			if !r.Static {
				r.markDown()
				f.log.Info("replica left", "replica", id)
			}
			if next[id] == nil {
				f.m.forget(id)
			}
		}
	}
	f.replicas = next
	slices.SortFunc(snap.Replicas, func(a, b *Replica) int { return strings.Compare(a.ID, b.ID) })
	slices.Sort(snap.ModelNames)
	for _, set := range snap.Models {
		slices.SortFunc(set.Replicas, func(a, b *Replica) int { return strings.Compare(a.ID, b.ID) })
		set.build()
	}
	f.snap.Store(snap)
}

// SetStatic replaces the static replicas (a config reload) and publishes
// the new snapshot at once. A replica whose spec is unchanged keeps its
// counters and health; a changed or removed one takes no new requests, and
// the requests already sent to it finish there (it is drained, not marked
// down: the operator removed it from the config, it did not fail).
func (f *Fleet) SetStatic(static []Spec) error {
	ids := map[string]bool{}
	for _, s := range static {
		if s.ID == "" || s.URL == nil {
			return errors.New("fleet: a static replica needs an ID and a URL")
		}
		if ids[s.ID] {
			return fmt.Errorf("fleet: duplicate replica %q", s.ID)
		}
		ids[s.ID] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg.Static = slices.Clone(static)
	f.rebuildLocked(f.lastSrc)
	return nil
}

// SetDiscovered replaces the replicas DNS discovery group found (an empty
// list: none) and publishes the new snapshot at once. As with SetStatic, a
// replica whose spec is unchanged keeps its counters and health, and one
// that is gone takes no new requests while the requests already sent to it
// finish there. A replica whose ID a static replica or another group
// already has is ignored.
func (f *Fleet) SetDiscovered(group string, specs []Spec) error {
	ids := map[string]bool{}
	for _, s := range specs {
		if s.ID == "" || s.URL == nil {
			return errors.New("fleet: a discovered replica needs an ID and a URL")
		}
		if ids[s.ID] {
			return fmt.Errorf("fleet: duplicate replica %q", s.ID)
		}
		ids[s.ID] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(specs) == 0 {
		delete(f.discovered, group)
	} else {
		f.discovered[group] = slices.Clone(specs)
	}
	f.rebuildLocked(f.lastSrc)
	return nil
}
