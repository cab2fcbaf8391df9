package enginesim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/inferrail/inferrail/internal/enginesim/kvevents"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// Run runs the simulator until ctx ends: DataParallelSize engine cores (rank
// r), one KV-event publisher per rank when KVEventsConfig enables events,
// and the HTTP front end (HTTP/1.1 and h2c on one port). When ctx ends the
// front end stops accepting, lets in-flight requests finish (up to
// ShutdownTimeout), then the engines and publishers stop. cfg.OnListening,
// if set, is called with the bound address once the port is open.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("sim config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tok, err := newTokenizer(cfg.Tokenizer, cfg.ChatTemplate)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := NewMetrics(reg, cfg.MetricsFlavor, cfg.modelName())
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	var kcfg kvevents.Config
	events := cfg.KVEventsConfig != ""
	if events {
		if kcfg, err = kvevents.ParseConfig(cfg.KVEventsConfig); err != nil {
			return fmt.Errorf("sim: --kv-events-config: %w", err)
		}
	}
	format, err := kvevents.ParseFormat(cfg.KVEventsFormat)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}

	g, gctx := errgroup.WithContext(ctx)
	// Engines and publishers outlive the front end's graceful shutdown, so
	// in-flight requests can finish.
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	named := func(name string, err error) error {
		if err == nil || (errors.Is(err, context.Canceled) && bgCtx.Err() != nil) {
			return nil
		}
		return fmt.Errorf("%s: %w", name, err)
	}

	ranks := make([]*rankState, cfg.DataParallelSize)
	for r := range ranks {
		rlog := log.With("rank", r)
		ecfg := cfg.Engine
		ecfg.Model, ecfg.Rank = cfg.modelName(), r
		var sink KVEventSink
		var pub *kvevents.Publisher
		if events {
			if pub, err = kvevents.New(kcfg, r, format, rlog, reg); err != nil {
				return fmt.Errorf("sim: kv events rank %d: %w", r, err)
			}
			sink = pub
		}
		eng, err := NewEngine(ecfg, rlog, m, sink)
		if err != nil {
			return fmt.Errorf("sim: engine rank %d: %w", r, err)
		}
		rs := &rankState{rank: r, core: eng, load: eng.Load, finished: eng.FinishedRequests, cachedHashes: func() []kvblock.Hash {
			blocks := eng.CachedBlocks()
			hs := make([]kvblock.Hash, len(blocks))
			for i, b := range blocks {
				hs[i] = b.Hash
			}
			return hs
		}}
		ranks[r] = rs
		g.Go(func() error { return named(fmt.Sprintf("engine %d", r), eng.Run(bgCtx)) })
		if pub != nil {
			rs.restartEvents = pub.Restart
			rs.gapEvents = pub.SkipLive
			g.Go(func() error { return named(fmt.Sprintf("kv events %d", r), pub.Run(bgCtx)) })
		}
	}

	fe := newFrontEnd(cfg, log, tok, ranks, reg)
	if err := fe.listen(); err != nil {
		stopBackground()
		_ = g.Wait()
		return fmt.Errorf("sim: %w", err)
	}
	log.Info("simulator listening", "addr", fe.Addr(), "model", cfg.modelName(), "data_parallel_size", cfg.DataParallelSize,
		"zero_latency", cfg.Engine.ZeroLatency, "kv_events", events)
	if cfg.OnListening != nil {
		cfg.OnListening(fe.Addr())
	}
	g.Go(func() error {
		defer stopBackground()
		return named("http", fe.serve(gctx))
	})
	return g.Wait()
}
