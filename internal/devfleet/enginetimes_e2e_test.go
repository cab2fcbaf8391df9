package devfleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/inferrail/inferrail/bench"
	"github.com/inferrail/inferrail/internal/devfleet"
)

// A bench run on a fleet of the real binary (2 simulators with their
// latency model, 2 sidecars, 1 balancer) sends every request with its own
// X-Request-Id, which the balancer and the sidecar pass to the engine, and
// joins each answered request with the engine's own timing from the
// simulator's /inferrail/debug/requests: a TTFT from the arrival at the
// engine, which is above zero and no longer than the client's, counted from
// the scheduled send.
func TestBenchJoinsTheEnginesTimings(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	cfg := devfleet.DefaultConfig()
	cfg.Binary, cfg.Replicas, cfg.Balancers, cfg.Port = bin, 2, 1, 0
	cfg.CacheBlocks = 2000
	cfg.LogDir = t.TempDir()
	f, err := devfleet.Start(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	bc := bench.DefaultConfig()
	bc.Warmup, bc.Targets = 0, []string{f.Balancers[0].URL}
	bc.EngineMetrics = f.EngineMetricsURLs()
	bc.CacheBlocks = cfg.CacheBlocks
	wl := bench.DefaultWorkload(bench.W1)
	wl.Groups, wl.SystemTokens, wl.Rate, wl.MaxSessions, wl.Duration = 2, 256, 20, 16, 0
	res, err := bench.RunWorkload(ctx, bc, wl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Summary; s.Requests != 16 || s.Failed != 0 {
		t.Fatalf("%d requests, %d failed; want 16 and 0", s.Requests, s.Failed)
	}
	ids := map[string]bool{}
	for _, r := range res.Records {
		if r.RequestID == "" || ids[r.RequestID] {
			t.Errorf("session %d turn %d: request id %q, want one of its own", r.Session, r.Turn, r.RequestID)
		}
		ids[r.RequestID] = true
		if r.EngineTTFT <= 0 || r.EngineTTFT > r.TTFT {
			t.Errorf("session %d turn %d (%s): engine TTFT %v, client TTFT %v; want 0 < engine ≤ client", r.Session, r.Turn, r.RequestID, r.EngineTTFT, r.TTFT)
		}
	}
}
