package devfleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferrail/inferrail/bench"
	"github.com/inferrail/inferrail/internal/devfleet"
)

// binDir holds the inferrail binary the tests build once (see TestMain).
var (
	binDir   string
	build    sync.Once
	buildErr error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildBinary builds the inferrail binary once per test process.
func buildBinary(t *testing.T) string {
	t.Helper()
	build.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "inferrail-devfleet-test-"); buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "inferrail"), "github.com/inferrail/inferrail/cmd/inferrail")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "inferrail")
}

// A real fleet (2 simulators, 2 sidecars, 2 balancers) starts, serves a short
// open-loop W1 run through both balancers with every request completing and
// naming its replica, reports cached tokens from usage and the engines, and
// stops with every child gone.
func TestFleetServesBench(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	defer cancel()
	cfg := devfleet.DefaultConfig()
	cfg.Binary, cfg.Replicas, cfg.Balancers, cfg.Port = bin, 2, 2, 0
	cfg.ZeroLatency, cfg.CacheBlocks = true, 2000
	cfg.Profiling = true
	cfg.LogDir = t.TempDir()
	f, err := devfleet.Start(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = f.Stop()
		}
	}()
	if len(f.Replicas) != 2 || len(f.Balancers) != 2 {
		t.Fatalf("fleet has %d replicas and %d balancers", len(f.Replicas), len(f.Balancers))
	}
	bc := bench.DefaultConfig()
	bc.Warmup, bc.Targets = 0, nil
	bc.EngineMetrics = f.EngineMetricsURLs()
	bc.CacheBlocks = cfg.CacheBlocks
	for _, b := range f.Balancers {
		bc.Targets = append(bc.Targets, b.URL)
	}
	wl := bench.DefaultWorkload(bench.W1)
	wl.Groups, wl.SystemTokens, wl.Rate, wl.MaxSessions, wl.Duration = 2, 256, 20, 20, 0
	res, err := bench.RunWorkload(ctx, bc, wl, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Requests != 20 || s.Failed != 0 {
		for _, r := range res.Records {
			if !r.OK() {
				t.Logf("failed: %+v", r)
			}
		}
		t.Fatalf("%d requests, %d failed; want 20 and 0", s.Requests, s.Failed)
	}
	for _, r := range res.Records {
		if r.Replica == "" {
			t.Fatalf("request %d: no x-inferrail-replica", r.Session)
		}
	}
	if s.HitRateUsage <= 0 || s.HitRateEngine <= 0 {
		t.Errorf("hit rates %v (usage) and %v (engines): two shared system prompts must hit", s.HitRateUsage, s.HitRateEngine)
	}
	if res.Bounds == nil || res.Bounds.HInf <= 0 || s.HitRateUsage > res.Bounds.HInf+1e-9 {
		t.Errorf("bounds %+v: H_inf must bound the hit rate %v", res.Bounds, s.HitRateUsage)
	}
	// Every sidecar follows its engine's KV events (not the approximate set
	// built from prompts, which misses generated blocks and evictions). An
	// engine publishes a batch only when its cache changes, and cache-aware
	// routing may well have sent both shared prefixes to one replica, so
	// each replica first gets a prompt of its own through its sidecar.
	for _, r := range f.Replicas {
		promptReplica(t, r.SidecarURL, cfg.Model, r.Name)
	}
	for _, r := range f.Replicas {
		waitExactSummary(ctx, t, r.Name, r.SidecarAdmin)
	}
	// Profiled (observability.profiling in every config file it wrote):
	// each process serves its own command line on its admin port.
	for _, p := range []struct{ admin, role string }{
		{f.Balancers[0].Admin, "balancer"}, {f.Balancers[1].Admin, "balancer"},
		{f.Replicas[0].SidecarAdmin, "sidecar"}, {f.Replicas[1].SidecarAdmin, "sidecar"},
	} {
		resp, err := http.Get(p.admin + "/debug/pprof/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), p.role) {
			t.Errorf("%s %s/debug/pprof/cmdline: %s %q, want its command line", p.role, p.admin, resp.Status, b)
		}
	}
	stopped = true
	if err := f.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	// Every child is gone: its port refuses connections.
	for _, r := range f.Replicas {
		if resp, err := http.Get(r.EngineURL + "/health"); err == nil {
			resp.Body.Close()
			t.Errorf("simulator %s still answers after Stop", r.EngineURL)
		}
	}
	for _, b := range f.Balancers {
		if resp, err := http.Get(b.URL + "/health"); err == nil {
			resp.Body.Close()
			t.Errorf("balancer %s still answers after Stop", b.URL)
		}
	}
}

// promptReplica sends one completion straight to a replica's sidecar (its
// data path), with a prompt no other request shares.
func promptReplica(t *testing.T, sidecarURL, model, name string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"model":      model,
		"prompt":     strings.Repeat("a prompt only "+name+" sees, ", 40),
		"max_tokens": 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(sidecarURL+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: completion through the sidecar: %s: %s", name, resp.Status, b)
	}
}

// waitExactSummary polls a sidecar's /v1/summary until its source is the
// exact block set and complete (the KV events flow). It fails the test if
// the summary is still approximate when ctx (the test's hang guard) ends.
func waitExactSummary(ctx context.Context, t *testing.T, name, admin string) {
	t.Helper()
	var sum struct {
		Source   string `json:"source"`
		Complete bool   `json:"complete"`
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(admin + "/v1/summary")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&sum)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if sum.Source == "exact" && sum.Complete {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("sidecar %s summary source %q complete %v; want exact and complete (KV events flowing)", name, sum.Source, sum.Complete)
		case <-tick.C:
		}
	}
}

// get returns the body of a GET of url, failing the test on any error.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// startFleet starts a fleet of cfg and stops it when the test ends (ctx,
// the hang guard, must be cancelled only after that: t.Cleanup(cancel)
// before this call, not defer).
func startFleet(t *testing.T, ctx context.Context, cfg devfleet.Config) *devfleet.Cluster {
	t.Helper()
	f, err := devfleet.Start(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return f
}
