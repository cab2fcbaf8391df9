package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
	"github.com/prometheus/client_golang/prometheus"
)

// fakeGossip records the order of events on shutdown.
type fakeGossip struct {
	mu    sync.Mutex
	loads []load.Report
	left  chan struct{}
	// leaving, when set, is waited on before Run returns (the test checks
	// the data path is still serving while the node leaves).
	leaving chan struct{}
}

func (g *fakeGossip) Run(ctx context.Context) error {
	<-ctx.Done()
	if g.leaving != nil {
		<-g.leaving
	}
	close(g.left)
	return nil
}

func (g *fakeGossip) SetLoad(r load.Report) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.loads = append(g.loads, r)
}

func (g *fakeGossip) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "gossip:"+r.URL.Path) })
}

const vllmPage = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="4",engine="0",num_gpu_blocks="800"} 1.0
`

type runRig struct {
	s             *Sidecar
	g             *fakeGossip
	data, admin   string
	cancel        context.CancelFunc
	done          chan error
	engineRelease chan struct{}
	engineGot     chan struct{}
	stopped       chan struct{}
	releaseOnce   sync.Once
}

// release lets every request waiting in the fake engine finish.
func (r *runRig) release() { r.releaseOnce.Do(func() { close(r.engineRelease) }) }

// startSidecar runs a sidecar (events disabled, fake gossip) in front of a
// fake engine whose /v1/completions waits for engineRelease.
func startSidecar(t *testing.T) *runRig {
	t.Helper()
	r := &runRig{engineRelease: make(chan struct{}), engineGot: make(chan struct{}, 16)}
	eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/metrics":
			_, _ = io.WriteString(w, vllmPage)
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","parent":null}]}`)
		case "/v1/completions":
			r.engineGot <- struct{}{}
			<-r.engineRelease
			_, _ = io.WriteString(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(eng.Close)
	cfg := DefaultConfig()
	cfg.EngineURL = eng.URL
	cfg.Tokenizer = TokenizerSim
	cfg.Listen, cfg.Admin = "127.0.0.1:0", "127.0.0.1:0"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	s, err := newSidecar(cfg, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r.g = &fakeGossip{left: make(chan struct{})}
	s.gossip = r.g
	s.ctl = newController(cfg.KVEvents.SilentGrace, s.feed, s.approx, nil, log, s.m)
	r.s = s
	dataLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	adminLn, err := net.Listen("tcp", cfg.Admin)
	if err != nil {
		t.Fatal(err)
	}
	r.data, r.admin = "http://"+dataLn.Addr().String(), "http://"+adminLn.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan error, 1)
	r.stopped = make(chan struct{})
	go func() {
		defer close(r.stopped)
		r.done <- s.serve(ctx, dataLn, adminLn)
	}()
	t.Cleanup(func() {
		cancel()
		r.release()
		<-r.stopped
	})
	return r
}

// TestRunLeavesGossipBeforeDraining: on shutdown the node leaves the gossip
// while the in-flight request is still being served, then the data path
// drains it to completion, then Run returns.
func TestRunLeavesGossipBeforeDraining(t *testing.T) {
	r := startSidecar(t)
	r.g.leaving = make(chan struct{})
	type result struct {
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Post(r.data+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hello world, a prompt"}`))
		if err != nil {
			res <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- result{string(b), err}
	}()
	<-r.engineGot
	r.cancel()
	// The node is leaving: the request must still be in flight.
	if c := r.s.proxy.counts.Counts(); c.InFlight != 1 {
		t.Fatalf("in flight while leaving = %d, want 1", c.InFlight)
	}
	close(r.g.leaving)
	<-r.g.left
	if err := waitUntil(func() bool { return r.s.draining.Load() }); err != nil {
		t.Fatal(err)
	}
	// Draining: health says so, the request is still served.
	resp, err := http.Get(r.admin + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("healthz while draining = %d, want 503", resp.StatusCode)
	}
	select {
	case err := <-r.done:
		t.Fatalf("Run returned (%v) before the in-flight request finished", err)
	default:
	}
	r.release()
	got := <-res
	if got.err != nil || got.body != `{"ok":true}` {
		t.Fatalf("in-flight request: %q, %v; want it served to the end", got.body, got.err)
	}
	if err := <-r.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestAdminEndpoints(t *testing.T) {
	r := startSidecar(t)
	// Let the scrape and control loops learn the engine's capacity.
	if err := waitUntil(func() bool { return r.s.Summary().Built }); err != nil {
		t.Fatal(err)
	}
	go func() { r.engineRelease <- struct{}{} }()
	resp, err := http.Post(r.data+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"the quick brown fox jumps over"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(r.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/healthz")
	if code != 200 {
		t.Errorf("healthz %d %q", code, body)
	}
	code, body = get("/v1/gossip/members")
	if code != 200 || body != "gossip:/v1/gossip/members" {
		t.Errorf("gossip members %d %q", code, body)
	}
	code, body = get("/v1/summary")
	var sum SummaryInfo
	if err := json.Unmarshal([]byte(body), &sum); err != nil || code != 200 {
		t.Fatalf("summary %d %q: %v", code, body, err)
	}
	ids := simtok.Encode("the quick brown fox jumps over", true)
	want := kvblock.Hashes(nil, kvblock.NewSeed("m", "", ""), ids, 4)
	if !sum.Built || sum.Source != sourceApprox || sum.Capacity != 800 || sum.Blocks["gpu"] != len(want) || sum.FalsePositiveRate != 0.001 || sum.Bytes == 0 {
		t.Errorf("summary %+v, want built approx summary of %d blocks, capacity 800", sum, len(want))
	}
	if code, _ = get("/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Errorf("profiles served with observability.profiling off: %d", code)
	}
	code, body = get("/debug/blocks")
	var dump BlocksDump
	if err := json.Unmarshal([]byte(body), &dump); err != nil || code != 200 {
		t.Fatalf("blocks %d %q: %v", code, body, err)
	}
	if len(dump.Blocks[MediumGPU]) != len(want) {
		t.Errorf("blocks %v, want %d", dump.Blocks, len(want))
	}
	code, body = get("/v1/load")
	var st LoadStatus
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != 200 {
		t.Fatalf("load %d %q: %v", code, body, err)
	}
	if !st.Readable || st.Engine.Running != 3 || st.Engine.NumGPUBlocks != 800 {
		t.Errorf("load %+v, want the engine's page", st)
	}
	_, body = get("/metrics")
	for _, name := range []string{
		"inferrail_sidecar_scrapes_total", "inferrail_sidecar_event_batches_total", "inferrail_sidecar_event_gaps_total",
		"inferrail_sidecar_event_replays_total", "inferrail_sidecar_blocks_held", "inferrail_sidecar_summary_bytes",
		"inferrail_sidecar_summary_epoch", `inferrail_sidecar_events_mode{mode="disabled"} 1`,
		"inferrail_sidecar_proxy_requests_in_flight", `inferrail_sidecar_proxy_requests_total{outcome="200"} 1`,
	} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	r.g.mu.Lock()
	n := len(r.g.loads)
	r.g.mu.Unlock()
	if n == 0 {
		t.Errorf("no load was published to the gossip")
	}
}

// TestNewWithRealGossip builds the sidecar with New (real gossip node on
// loopback, events configured) and checks the node answers on the admin
// port and advertises what the sidecar learned about its engine.
func TestNewWithRealGossip(t *testing.T) {
	eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/metrics":
			_, _ = io.WriteString(w, vllmPage)
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","parent":null}]}`)
		}
	}))
	defer eng.Close()
	cfg := DefaultConfig()
	cfg.EngineURL = eng.URL
	cfg.Listen, cfg.Admin = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Gossip.Bind, cfg.Gossip.NodeName, cfg.Gossip.Profile = "127.0.0.1:0", "unit-sidecar", "local"
	cfg.KVEvents.Endpoint = "tcp://127.0.0.1:1" // nobody publishes there
	s, err := New(cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	dataLn, _ := net.Listen("tcp", "127.0.0.1:0")
	adminLn, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, dataLn, adminLn) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	type member struct {
		Name string `json:"name"`
		Meta struct {
			Models    []string `json:"models"`
			Engine    string   `json:"engine"`
			BlockSize int      `json:"block_size"`
			DataAddr  string   `json:"data_addr"`
		} `json:"meta"`
	}
	var last string
	err = waitUntil(func() bool {
		resp, err := http.Get("http://" + adminLn.Addr().String() + "/v1/gossip/members")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct {
			Members []member `json:"members"`
		}
		b, _ := io.ReadAll(resp.Body)
		last = string(b)
		if json.Unmarshal(b, &body) != nil || len(body.Members) != 1 {
			return false
		}
		m := body.Members[0]
		return m.Name == "unit-sidecar" && len(m.Meta.Models) == 1 && m.Meta.Models[0] == "m" &&
			m.Meta.Engine == "vllm" && m.Meta.BlockSize == 4 && m.Meta.DataAddr == dataLn.Addr().String()
	})
	if err != nil {
		t.Fatalf("gossip members never showed the learned metadata; last answer:\n%s", last)
	}
	if got := s.ctl.modeName(); got != modeWaiting {
		t.Errorf("events mode %q, want waiting", got)
	}
}
