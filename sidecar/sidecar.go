package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/h2c"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
	"github.com/inferrail/inferrail/internal/tracing"
	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/inferrail/inferrail/sidecar/engine/llamacpp"
	"github.com/inferrail/inferrail/sidecar/engine/sglang"
	"github.com/inferrail/inferrail/sidecar/engine/vllm"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
)

// gossipNode is the sidecar's membership in the gossip (gossip.Node behind
// an adapter in gossip.go).
type gossipNode interface {
	// Run joins and disseminates until ctx ends, then leaves the cluster and
	// shuts down before returning.
	Run(ctx context.Context) error
	// SetLoad sets the load announced from the next tick on. It must not
	// block.
	SetLoad(load.Report)
	// Handler serves /v1/gossip/members and /v1/gossip/state.
	Handler() http.Handler
}

// Sidecar is one running sidecar. Build it with New and start it with Run.
type Sidecar struct {
	cfg Config
	log *slog.Logger
	reg *prometheus.Registry
	m   *metrics

	engineURL *url.URL
	transport *http.Transport
	proxy     *proxy
	scraper   *scraper
	feed      *summaryFeed
	approx    *approxSet
	llamacpp  *llamacppReader
	ctl       *controller
	exact     exactSource // nil when events are disabled
	gossip    gossipNode  // nil only in tests

	model       atomic.Pointer[string]
	blockSize   atomic.Int64
	modelKnown  chan struct{} // closed once model is set
	scraped     chan struct{} // closed after the first scrape, readable or not
	scrapedOnce sync.Once
	models      atomic.Pointer[engineModels]

	// lastLoad is the last scrape's outcome and lastGood the last readable
	// one, written by the scraper and read by the control loop and the admin
	// server.
	lastLoad, lastGood atomic.Pointer[scrapeOutcome]
	// kvMark is ledger.kvTokens at the start of the scrape in progress
	// (scrapeOutcome.kvMark).
	kvMark   atomic.Int64
	draining atomic.Bool
	// dataAddr and adminAddr are the advertised addresses of the bound
	// listeners, set by serve before the loops start.
	dataAddr, adminAddr string
}

// metaUpdater is the optional ability of a gossip node to publish what the
// sidecar learned about its engine.
type metaUpdater interface {
	updateMeta(e engineMeta)
}

// engineMeta is what the sidecar advertises about its engine; a zero field
// keeps the value already published.
type engineMeta struct {
	models              []string
	adapters            int
	kind                string
	blockSize           int
	capacityBlocks      int
	dataAddr, adminAddr string
}

type scrapeOutcome struct {
	load engine.Load
	err  error
	at   time.Time
	// kvMark is the data path's ledger.kvTokens when the scrape began: what
	// changed since is not in load.KVUsage.
	kvMark int64
}

// New builds a sidecar from a validated config. reg receives every metric
// (the sidecar's, the gossip node's and the event subscriber's) and is served
// on the admin port.
func New(cfg Config, log *slog.Logger, reg *prometheus.Registry) (*Sidecar, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sidecar config: %w", err)
	}
	s, err := newSidecar(cfg, log, reg)
	if err != nil {
		return nil, err
	}
	if cfg.KVEvents.Endpoint != "" {
		ex, err := newExactPipeline(cfg, s.waitModel, s.feed.sink(sourceExact), log, reg, s.m)
		if err != nil {
			return nil, err
		}
		ex.waitEngine = s.waitScraped
		s.exact = ex
	}
	g, err := newGossip(cfg, s.feed, log, reg)
	if err != nil {
		return nil, err
	}
	s.gossip = g
	s.ctl = newController(cfg.KVEvents.SilentGrace, s.feed, s.approx, s.exact, log, s.m)
	s.ctl.traffic = s.proxy.prompts.Load
	s.proxy.tr, err = tracing.New(cfg.Observability.Config, tracing.Options{Service: "inferrail-sidecar",
		Instance: cfg.Gossip.NodeName, Log: log.With("component", "tracing"), Registerer: reg})
	if err != nil {
		s.closeGossip()
		return nil, err
	}
	return s, nil
}

// newSidecar builds everything but the event pipeline, the gossip node and
// the controller, which New (or a test) adds.
func newSidecar(cfg Config, log *slog.Logger, reg *prometheus.Registry) (*Sidecar, error) {
	u, err := url.Parse(cfg.EngineURL)
	if err != nil {
		return nil, fmt.Errorf("engine url: %w", err)
	}
	s := &Sidecar{cfg: cfg, log: log, reg: reg, engineURL: u, modelKnown: make(chan struct{}), scraped: make(chan struct{})}
	s.blockSize.Store(int64(cfg.BlockSize))
	if cfg.Model != "" {
		s.setModel(cfg.Model)
	}
	s.transport = newEngineTransport(cfg.Proxy)
	var proxyCounts func() DataPathCounts
	s.m = newMetrics(reg, func() DataPathCounts { return proxyCounts() })
	s.feed = newSummaryFeed(cfg.Summary, s.m)
	s.approx = newApproxSet(int(max(cfg.Summary.Capacity, 1<<15)), s.feed.sink(sourceApprox), func(n int) { s.m.approxEvictions.Add(float64(n)) })
	tok, err := loadTokenizer(cfg.Tokenizer, reg)
	if err != nil {
		return nil, err
	}
	insp := &promptInspector{tok: tok, model: s.currentModel, lora: s.loraOf, blockSize: func() int { return int(s.blockSize.Load()) }}
	retry := newStaleConnRetry(s.transport, newFreshTransport(cfg.Proxy), s.m.engineRetries.Inc)
	s.proxy = newProxy(u, cfg.Proxy, retry, insp, s.approx, log.With("component", "proxy"), s.m)
	proxyCounts = s.proxy.counts.Counts
	s.proxy.cachedTokens = s.cachedTokens
	s.proxy.engineStatus = s.engineStatus

	parser := &autoParser{}
	switch cfg.Engine {
	case EngineVLLM:
		parser.tables = []engine.MetricNames{vllm.Names}
	case EngineSGLang:
		parser.tables = []engine.MetricNames{sglang.Names}
	case EngineLlamaCpp:
		parser.tables = []engine.MetricNames{llamacpp.Names}
	default:
		parser.tables = []engine.MetricNames{vllm.Names, sglang.Names, llamacpp.Names}
	}
	client := &http.Client{Transport: s.transport}
	metricsURL := u.JoinPath(cfg.Scrape.Path).String()
	fetch := httpPageFetcher(client, metricsURL)
	marked := func(ctx context.Context) (io.ReadCloser, error) {
		// The scraper calls fetch and then onScrape on one goroutine, so
		// the mark taken here is the one onScrape stores.
		s.kvMark.Store(s.proxy.counts.kvTokens())
		return fetch(ctx)
	}
	s.scraper = newScraper(cfg.Scrape, marked, parser.parse, s.onScrape, log.With("component", "scrape"), s.m)
	s.llamacpp = newLlamaCppReader(client, u, cfg.Scrape.MaxBytes, s.blockSizeNow, log.With("component", "llamacpp"))
	s.scraper.complete = s.llamacpp.complete
	return s, nil
}

// cachedTokens returns the tokens of the leading blocks of each prompt that
// the active block set holds on the GPU (0 before the first summary).
func (s *Sidecar) cachedTokens(prompts [][]kvblock.Hash) int {
	b := s.feed.builder()
	if b == nil {
		return 0
	}
	n := 0
	for _, hs := range prompts {
		n += b.Prefix(hs, summary.MediumGPU)
	}
	return n * int(s.blockSize.Load())
}

// Run serves until ctx ends. Shutdown is ordered: leave the gossip first (so
// balancers stop sending), then drain the data path (bounded by
// ShutdownTimeout), then stop the rest.
func (s *Sidecar) Run(ctx context.Context) error {
	dataLn, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		s.closeGossip()
		return fmt.Errorf("listen data path: %w", err)
	}
	adminLn, err := net.Listen("tcp", s.cfg.Admin)
	if err != nil {
		dataLn.Close()
		s.closeGossip()
		return fmt.Errorf("listen admin: %w", err)
	}
	return s.serve(ctx, dataLn, adminLn)
}

func (s *Sidecar) serve(ctx context.Context, dataLn, adminLn net.Listener) error {
	defer s.transport.CloseIdleConnections()
	s.dataAddr = hostPortFor(s.cfg.Gossip.Advertise, dataLn.Addr().String())
	s.adminAddr = hostPortFor(s.cfg.Gossip.Advertise, adminLn.Addr().String())
	s.log.Info("sidecar starting", "data", dataLn.Addr().String(), "admin", adminLn.Addr().String(),
		"engine", s.cfg.EngineURL, "kv_events", s.cfg.KVEvents.Endpoint)
	dataSrv := &http.Server{
		Handler:           s.proxy,
		Protocols:         h2c.ServerProtocols(),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	var gossipHandler http.Handler
	if s.gossip != nil {
		gossipHandler = s.gossip.Handler()
	}
	ui := s.newUI()
	adminSrv := &http.Server{
		Handler: newAdminHandler(adminDeps{
			gatherer: s.reg, gossip: gossipHandler, summary: s.Summary, load: s.Load,
			healthy: s.healthy, blocks: s.blocks, ui: ui, profiling: s.cfg.Observability.Profiling,
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}

	// Work lives until the shutdown sequence ends it, not when ctx ends.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	gossipCtx, leave := context.WithCancel(workCtx)
	defer leave()
	g, gctx := errgroup.WithContext(workCtx)
	named := func(name string, f func() error) {
		g.Go(func() error {
			if err := f(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		})
	}
	gossipDone := make(chan struct{})
	named("gossip", func() error {
		defer close(gossipDone)
		if s.gossip == nil {
			<-gossipCtx.Done()
			return nil
		}
		return s.gossip.Run(gossipCtx)
	})
	named("data", func() error { return serveHTTP(dataSrv, dataLn) })
	named("admin", func() error { return serveHTTP(adminSrv, adminLn) })
	named("scrape", func() error { return s.scraper.Run(gctx) })
	named("ui", func() error { return ui.Run(gctx) })
	named("control", func() error { return s.control(gctx) })
	named("models", func() error { return s.modelsLoop(gctx) })
	if s.exact != nil {
		named("events", func() error { return s.exact.Run(gctx) })
	}
	named("shutdown", func() error {
		select {
		case <-ctx.Done():
			s.log.Info("shutting down: leaving the gossip")
		case <-gctx.Done():
			s.log.Error("a component failed: shutting down")
		}
		s.draining.Store(true)
		leave()
		<-gossipDone
		s.log.Info("left the gossip: draining the data path", "timeout", s.cfg.ShutdownTimeout)
		dctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		err := dataSrv.Shutdown(dctx)
		if err != nil {
			s.log.Warn("drain timed out: closing the remaining connections", "err", err)
			_ = dataSrv.Close()
		}
		s.shutdownTracer()
		stopWork()
		actx, acancel := context.WithTimeout(context.Background(), time.Second)
		defer acancel()
		_ = adminSrv.Shutdown(actx)
		return nil
	})
	err := g.Wait()
	s.log.Info("sidecar stopped", "err", err)
	return err
}

// closeGossip releases the gossip node's sockets when Run cannot start.
func (s *Sidecar) closeGossip() {
	if c, ok := s.gossip.(interface{ shutdown() error }); ok {
		_ = c.shutdown()
	}
}

func serveHTTP(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
