package sidecar

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/internal/buildinfo"
	"github.com/inferrail/inferrail/internal/load"
	"github.com/prometheus/client_golang/prometheus"
)

// gossipAdapter puts a gossip.Node behind the gossipNode interface and keeps
// its metadata current as the sidecar learns about its engine.
type gossipAdapter struct {
	n   *gossip.Node
	log *slog.Logger

	mu sync.Mutex // serializes metadata updates
}

var (
	_ gossipNode  = (*gossipAdapter)(nil)
	_ metaUpdater = (*gossipAdapter)(nil)
)

// newGossip builds the sidecar's gossip node, disseminating feed's summaries.
func newGossip(cfg Config, feed *summaryFeed, log *slog.Logger, reg prometheus.Registerer) (*gossipAdapter, error) {
	gc, err := cfg.Gossip.Config(gossip.RoleSidecar)
	if err != nil {
		return nil, err
	}
	engineKind := cfg.Engine
	if engineKind == EngineAuto {
		engineKind = ""
	}
	gc.Meta = gossip.Meta{
		Engine:    engineKind,
		BlockSize: uint32(cfg.BlockSize),
		AdminAddr: hostPortFor(cfg.Gossip.Advertise, cfg.Admin),
		Version:   buildinfo.Version(),
	}
	gc.Meta.EnginePort = enginePort(cfg.EngineURL)
	if cfg.Model != "" {
		gc.Meta.Models = []string{cfg.Model}
	}
	n, err := gossip.New(gc, log.With("component", "gossip"), reg)
	if err != nil {
		return nil, err
	}
	n.SetSummarySource(feed)
	return &gossipAdapter{n: n, log: log}, nil
}

func (g *gossipAdapter) Run(ctx context.Context) error { return g.n.Run(ctx) }
func (g *gossipAdapter) Handler() http.Handler         { return g.n.Handler() }
func (g *gossipAdapter) shutdown() error               { return g.n.Shutdown() }

// SetLoad sets the load report the node announces.
func (g *gossipAdapter) SetLoad(r load.Report) { g.n.SetLoad(r) }

// updateMeta publishes what the sidecar learned about its engine (models,
// kind, block size, KV capacity, bound addresses) when it changed. It starts
// from the node's current metadata, which the node itself updates with the
// summary epoch.
func (g *gossipAdapter) updateMeta(e engineMeta) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cur := g.n.Meta()
	m := cur
	m.Models = slices.Clone(cur.Models)
	if len(e.models) > 0 {
		m.Models, m.Adapters = e.models, e.adapters
	}
	if e.kind != "" {
		m.Engine = e.kind
	}
	if e.blockSize > 0 {
		m.BlockSize = uint32(e.blockSize)
	}
	if e.capacityBlocks > 0 {
		m.KVCapacityBlocks = uint32(min(e.capacityBlocks, math.MaxUint32))
	}
	if e.dataAddr != "" {
		m.DataAddr = e.dataAddr
	}
	if e.adminAddr != "" {
		m.AdminAddr = e.adminAddr
	}
	if metaEqual(m, cur) {
		return
	}
	if err := g.n.SetMeta(m); err != nil {
		g.log.Warn("gossip metadata update failed", "err", err)
	}
}

func metaEqual(a, b gossip.Meta) bool {
	return slices.Equal(a.Models, b.Models) && a.Adapters == b.Adapters && a.Role == b.Role && a.Engine == b.Engine &&
		a.BlockSize == b.BlockSize && a.DataAddr == b.DataAddr && a.AdminAddr == b.AdminAddr &&
		a.Version == b.Version && a.SummaryEpoch == b.SummaryEpoch && a.EnginePort == b.EnginePort &&
		a.KVCapacityBlocks == b.KVCapacityBlocks
}

// enginePort is the port of the engine's URL (its scheme's default when it
// names none; 0 when it does not parse), advertised so that a gateway can be
// told the engine's own pod IP:port (docs/epp.md).
func enginePort(engineURL string) uint32 {
	u, err := url.Parse(engineURL)
	if err != nil {
		return 0
	}
	p := u.Port()
	if p == "" {
		p = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0
	}
	return uint32(n)
}
