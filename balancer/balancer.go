package balancer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeebo/xxh3"
	"golang.org/x/sync/errgroup"

	"github.com/inferrail/inferrail/balancer/decisionlog"
	"github.com/inferrail/inferrail/balancer/discovery"
	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/gateway"
	"github.com/inferrail/inferrail/balancer/proxy"
	"github.com/inferrail/inferrail/balancer/respcache"
	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/internal/buildinfo"
	"github.com/inferrail/inferrail/internal/h2c"
	"github.com/inferrail/inferrail/internal/tokenize"
	"github.com/inferrail/inferrail/internal/tracing"
	"github.com/inferrail/inferrail/internal/webui"
)

// Balancer is one balancer process.
type Balancer struct {
	cfg    Config
	log    *slog.Logger
	gather prometheus.Gatherer
	m      *metrics
	node   *gossip.Node // nil: gossip disabled
	// sharer sends the policies' placements to the other balancers (nil:
	// gossip disabled).
	sharer *placementSharer
	// name is the balancer's identity: its gossip node name, which its
	// requests carry to sidecars (load.Origin) and which seeds its
	// policies' randomness apart from other balancers'.
	name    string
	seedMix uint64 // xxh3 of name
	fleet   *fleet.Fleet
	dns     *discovery.DNS // nil: no discovery.dns groups
	proxy   *proxy.Proxy
	pool    *tokenize.Pool
	now     func() time.Time
	reg     prometheus.Registerer
	gm      *gateway.Metrics
	cache   *respcache.Cache // nil: response_cache off
	tr      *tracing.Tracer  // nil: tracing off

	// live is the reloadable state (models, gateway); Reload swaps it.
	live       atomic.Pointer[live]
	reloadMu   sync.Mutex // serializes reloads; protects source
	source     ReloadSource
	reloads    *prometheus.CounterVec
	lastReload prometheus.Gauge

	scratch sync.Pool // *scratch

	// decisions samples routing decisions (decision_log).
	decisions *decisionlog.Log
	// ui is the web UI on the admin port.
	ui *webui.UI

	readyMu    sync.Mutex // protects clientAddr, adminAddr and eppAddr
	clientAddr string
	adminAddr  string
	eppAddr    string
	ready      chan struct{}
}

// New validates cfg, loads the tokenizers, binds the gossip (if enabled) and
// builds the fleet. log may be nil. reg receives every metric; when it is
// also a prometheus.Gatherer, the admin port serves it.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Balancer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config:\n%w", err)
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b := &Balancer{cfg: cfg, log: log, m: newMetrics(reg), now: time.Now, ready: make(chan struct{}), reg: reg,
		gm: gateway.NewMetrics(reg)}
	b.reloads, b.lastReload = newReloadMetrics(reg)
	if g, ok := reg.(prometheus.Gatherer); ok {
		b.gather = g
	}
	b.name = nodeName(cfg.Gossip)
	b.seedMix = xxh3.HashString(b.name)
	l, err := b.buildLive(&b.cfg, nil)
	if err != nil {
		return nil, err
	}
	b.live.Store(l)
	b.pool = tokenize.NewPool(tokenize.PoolConfig{
		Workers: cfg.Tokenize.Workers, MaxWait: cfg.Tokenize.MaxWait,
		MaxQueue: cfg.Tokenize.MaxQueue, MaxSize: cfg.Tokenize.MaxSize,
	}, reg)
	b.proxy = proxy.New(cfg.Timeouts.Upstream, reg)
	if b.cache, err = newResponseCache(cfg.ResponseCache, log, reg); err != nil {
		return nil, err
	}
	var src fleet.MemberSource
	if cfg.Gossip.Enabled {
		gc, err := b.gossipConfig()
		if err != nil {
			return nil, err
		}
		if b.node, err = gossip.New(gc, log.With("component", "gossip"), reg); err != nil {
			return nil, err
		}
		src = b.node.Peers()
		b.sharer = newPlacementSharer(b.node.SendPlacements, b.node.OtherBalancers, log.With("component", "share"), b.m)
		b.shareModels(l.models)
		b.node.SetPlacementHandler(b.learnPlacements)
	}
	b.ui = webui.New(webui.Info{Role: "balancer", Name: b.name, Version: buildinfo.Version(), Gossip: b.node != nil},
		webui.GathererTotals(b.gather, "inferrail_balancer_requests_total", "inferrail_balancer_ttft_seconds",
			"inferrail_balancer_prompt_tokens", "inferrail_balancer_predicted_cached_tokens"))
	maxAge, _ := loadTimings(cfg.Gossip.Timings)
	fc := fleet.Config{Defaults: cfg.ReplicaDefaults, Health: cfg.Health, Static: staticSpecs(&b.cfg), Origin: b.name,
		LoadMaxAge: maxAge}
	if b.fleet, err = fleet.New(fc, src, prober{b.proxy}, log.With("component", "fleet"), reg); err != nil {
		if b.node != nil {
			_ = b.node.Shutdown()
		}
		return nil, err
	}
	if b.tr, err = b.newTracer(); err != nil {
		if b.node != nil {
			_ = b.node.Shutdown()
		}
		return nil, err
	}
	// Opened last: nothing after it can fail and leave the file open.
	if b.decisions, err = decisionlog.Open(cfg.DecisionLog, log.With("component", "decision_log"), reg); err != nil {
		if b.node != nil {
			_ = b.node.Shutdown()
		}
		return nil, err
	}
	if len(cfg.Discovery.DNS) > 0 {
		b.dns = discovery.New(dnsGroups(&b.cfg), discovery.NewResolver(cfg.Discovery.Resolver), b.fleet,
			log.With("component", "discovery"), reg)
	}
	return b, nil
}

// dnsGroups returns the discovery groups of cfg.
func dnsGroups(cfg *Config) []discovery.Group {
	var out []discovery.Group
	for _, g := range cfg.Discovery.DNS {
		out = append(out, discovery.Group{Name: g.Group, Hosts: g.Names, Port: g.Port, Interval: g.Interval, Timeout: g.Timeout,
			Replica: fleet.Spec{H2C: g.H2C, Models: g.Models, BlockSize: g.BlockSize, MaxConcurrency: g.MaxConcurrency,
				MaxPending: g.MaxPending, CapacityBlocks: g.KVCapacityBlocks, Weight: g.Weight, ProbePath: g.ProbePath}})
	}
	return out
}

// nodeName returns the balancer's name: the configured node name, else, when
// it gossips on a fixed port, the host name, "-balancer" and that port (so
// that balancers on one host differ), else "balancer-" and a random suffix.
func nodeName(c GossipConfig) string {
	if c.NodeName != "" {
		return c.NodeName
	}
	_, port, _ := net.SplitHostPort(c.Bind)
	if h, err := os.Hostname(); err == nil && c.Enabled && port != "" && port != "0" {
		return h + "-balancer-" + port
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "balancer-" + hex.EncodeToString(b[:])
}

// gossipConfig maps the gossip section onto gossip.Config, under the
// balancer's node name.
func (b *Balancer) gossipConfig() (gossip.Config, error) {
	nc := b.cfg.Gossip.NodeConfig
	nc.NodeName = b.name
	gc, err := nc.Config(gossip.RoleBalancer)
	gc.Meta = gossip.Meta{Version: buildinfo.Version()}
	return gc, err
}

// prober probes replicas through the proxy's transports.
type prober struct{ p *proxy.Proxy }

func (p prober) Probe(ctx context.Context, r *fleet.Replica, path string) error {
	return p.p.Probe(ctx, r.Upstream(), path)
}

// Fleet returns the balancer's fleet.
func (b *Balancer) Fleet() *fleet.Fleet { return b.fleet }

// Node returns the gossip node (nil when gossip is disabled).
func (b *Balancer) Node() *gossip.Node { return b.node }

// Addrs returns the bound client and admin addresses once Run listens.
func (b *Balancer) Addrs(ctx context.Context) (client, admin string, err error) {
	select {
	case <-b.ready:
	case <-ctx.Done():
		return "", "", ctx.Err()
	}
	b.readyMu.Lock()
	defer b.readyMu.Unlock()
	return b.clientAddr, b.adminAddr, nil
}

// Run listens on the client and admin addresses, runs the gossip node and
// the fleet, and serves until ctx ends; then it stops accepting, drains
// in-flight requests for up to ShutdownTimeout and leaves the gossip.
func (b *Balancer) Run(ctx context.Context) error {
	var lc net.ListenConfig
	cl, err := lc.Listen(ctx, "tcp", b.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", b.cfg.Listen, err)
	}
	al, err := lc.Listen(ctx, "tcp", b.cfg.Admin)
	if err != nil {
		cl.Close()
		return fmt.Errorf("listen %s: %w", b.cfg.Admin, err)
	}
	if b.dns != nil {
		// The first lookups finish (each within its timeout) before the
		// first request, so a fresh balancer does not answer 503.
		b.dns.Refresh(ctx)
	}
	var es *eppServer
	if b.cfg.EPP.Listen != "" {
		if es, err = b.newEPPServer(ctx); err != nil {
			cl.Close()
			al.Close()
			return err
		}
	}
	b.readyMu.Lock()
	b.clientAddr, b.adminAddr = cl.Addr().String(), al.Addr().String()
	if es != nil {
		b.eppAddr = es.ln.Addr().String()
	}
	b.readyMu.Unlock()
	close(b.ready)
	b.log.Info("balancer listening", "listen", b.clientAddr, "admin", b.adminAddr, "epp", b.eppAddr)

	client := &http.Server{Handler: b.Handler(), Protocols: h2c.ServerProtocols(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(b.log.Handler(), slog.LevelDebug)}
	admin := &http.Server{Handler: b.AdminHandler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(b.log.Handler(), slog.LevelDebug)}

	g, gctx := errgroup.WithContext(ctx)
	named := func(name string, err error) error {
		if err == nil || errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	g.Go(func() error { return named("client server", client.Serve(cl)) })
	g.Go(func() error { return named("admin server", admin.Serve(al)) })
	fctx, stopFleet := context.WithCancel(context.Background())
	defer stopFleet()
	g.Go(func() error { return named("fleet", b.fleet.Run(fctx)) })
	g.Go(func() error { return named("ui", b.ui.Run(fctx)) })
	if b.dns != nil {
		g.Go(func() error { return named("dns discovery", b.dns.Run(fctx)) })
	}
	nodeCtx, stopNode := context.WithCancel(context.Background())
	defer stopNode()
	// The decision log is written until the drain ends.
	logCtx, stopLog := context.WithCancel(context.Background())
	defer stopLog()
	g.Go(func() error { return named("decision log", b.decisions.Run(logCtx)) })
	if b.node != nil {
		g.Go(func() error { return named("gossip", b.node.Run(nodeCtx)) })
		g.Go(func() error { b.sharer.run(nodeCtx.Done()); return nil })
		if b.cfg.Gossip.ShareLoad {
			_, every := loadTimings(b.cfg.Gossip.Timings)
			b.node.SetLoadHandler(b.fleet.LearnLoad)
			g.Go(func() error {
				return named("share load", b.fleet.ShareLoad(nodeCtx, b.node.SendLoad, b.node.OtherBalancers, every))
			})
		}
	}
	if b.cache != nil {
		g.Go(func() error { return named("response cache", b.cache.Run(fctx)) })
	}
	if es != nil {
		g.Go(func() error { return named("epp server", es.grpc.Serve(es.ln)) })
		g.Go(func() error { return named("epp health", es.svc.Run(gctx)) })
	}
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), b.cfg.ShutdownTimeout)
		defer cancel()
		var eppDrained sync.WaitGroup
		if es != nil { // drain the gateway's streams alongside the clients'
			eppDrained.Go(func() { es.stop(sctx) })
		}
		err := client.Shutdown(sctx)
		eppDrained.Wait()
		stopLog()
		stopNode()
		stopFleet()
		_ = admin.Shutdown(sctx)
		b.proxy.Close()
		_ = b.cur().lim.Close()
		if b.cache != nil {
			_ = b.cache.Close()
		}
		b.shutdownTracer()
		if err != nil {
			b.log.Warn("drain did not finish", "err", err)
		}
		return nil
	})
	return g.Wait()
}
