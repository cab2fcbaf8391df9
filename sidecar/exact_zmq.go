package sidecar

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/inferrail/inferrail/internal/ratelog"

	"github.com/inferrail/inferrail/sidecar/engine/vllm"
	"github.com/inferrail/inferrail/sidecar/engine/zmqsub"
	"golang.org/x/sync/errgroup"
)

// splitTCPEndpoint parses tcp://host:port. A wildcard host (the engine's
// bind address, "*", "0.0.0.0" or "::") means the engine beside the sidecar:
// 127.0.0.1.
func splitTCPEndpoint(ep string) (host string, port int, err error) {
	rest, ok := strings.CutPrefix(ep, "tcp://")
	if !ok {
		return "", 0, fmt.Errorf("endpoint %q: want tcp://host:port", ep)
	}
	h, p, err := net.SplitHostPort(rest)
	if err != nil {
		return "", 0, fmt.Errorf("endpoint %q: %w", ep, err)
	}
	if port, err = strconv.Atoi(p); err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("endpoint %q: bad port", ep)
	}
	switch h {
	case "*", "", "0.0.0.0", "::":
		h = "127.0.0.1"
	}
	return h, port, nil
}

// subscribeZMQ runs one ZMQ subscriber per data-parallel rank (with replay
// when configured) and applies its feed to the pipeline in order.
func subscribeZMQ(ctx context.Context, p *exactPipeline) error {
	kv := p.cfg.KVEvents
	host, port, err := splitTCPEndpoint(kv.Endpoint)
	if err != nil {
		return err
	}
	zc := zmqsub.Config{Host: host, BasePort: port, Ranks: kv.DataParallelSize, Topic: kv.Topic, MaxMessageBytes: kv.MaxMessageBytes}
	if kv.ReplayEndpoint != "" {
		if _, zc.ReplayBasePort, err = splitTCPEndpoint(kv.ReplayEndpoint); err != nil {
			return err
		}
	}
	// One reader decodes both engines' payloads: SGLang publishes vLLM's
	// array-era layout, and sglang.DecodeBatch is the same reader
	// (docs/engines.md#sglang-kv-events), so the engine kind need not be known.
	sub, err := zmqsub.New(zc, vllm.DecodeBatch, p.log, p.reg)
	if err != nil {
		return fmt.Errorf("kv events subscriber: %w", err)
	}
	p.log.Info("subscribing to KV events", "endpoint", kv.Endpoint, "replay", kv.ReplayEndpoint, "ranks", kv.DataParallelSize)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return sub.Run(ctx) })
	g.Go(func() error {
		replaying := map[int]bool{}
		warn := ratelog.New(p.log, 10*time.Second)
		for u := range sub.Updates() {
			switch u.Kind {
			case zmqsub.UpdateBatch:
				if u.Replayed && !replaying[u.Rank] {
					p.gap(true) // the first replayed batch of a recovered gap
				}
				replaying[u.Rank] = u.Replayed
				p.applyBatch(u.Batch)
			case zmqsub.UpdateRestart:
				warn.LogKey(slog.LevelWarn, "restart "+strconv.Itoa(u.Rank), "engine KV-event publisher restarted: clearing its blocks", "rank", u.Rank)
				p.clearRank(u.Rank, false)
			case zmqsub.UpdateIncomplete:
				warn.LogKey(slog.LevelWarn, "lost "+strconv.Itoa(u.Rank), "KV events lost for good: clearing the rank, summary incomplete until the engine clears or restarts it", "rank", u.Rank)
				p.gap(false)
				p.clearRank(u.Rank, true)
			}
		}
		return nil
	})
	return g.Wait()
}
