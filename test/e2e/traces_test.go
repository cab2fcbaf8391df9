package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/inferrail/inferrail/internal/tracing/otlptest"
)

// trEngineTap sits between a sidecar and its engine and records the
// traceparent of every completion the engine receives.
type trEngineTap struct {
	url  string
	mu   sync.Mutex
	seen []string
}

func trStartTap(t *testing.T, engine string) *trEngineTap {
	t.Helper()
	u, err := url.Parse(engine)
	if err != nil {
		t.Fatal(err)
	}
	tap := &trEngineTap{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/completions" {
			tap.mu.Lock()
			tap.seen = append(tap.seen, r.Header.Get("Traceparent"))
			tap.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	tap.url = "http://" + ln.Addr().String()
	return tap
}

func (tap *trEngineTap) traceparents() []string {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return append([]string(nil), tap.seen...)
}

// trStartBalancer is btStartBalancer with extra YAML appended to its config.
func trStartBalancer(t *testing.T, bin, name, extra string) *btBalancer {
	t.Helper()
	l, a, g := scFreePort(t), scFreePort(t), scFreePort(t)
	b := &btBalancer{url: fmt.Sprintf("http://127.0.0.1:%d", l), admin: fmt.Sprintf("http://127.0.0.1:%d", a),
		gossip: fmt.Sprintf("127.0.0.1:%d", g)}
	path := filepath.Join(t.TempDir(), name+".yaml")
	cfg := btConfig(fmt.Sprintf("127.0.0.1:%d", l), fmt.Sprintf("127.0.0.1:%d", a), b.gossip, nil, "500ms") + extra
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	b.proc = scStart(t, bin, name, "balancer", "--config", path, "--node-name", name, "--log-level", "debug")
	scWait(t, name+" admin", func() error {
		resp, err := http.Get(b.admin + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return b
}

// trFleet is one sim behind a tap, its sidecar and a balancer, tracing to
// endpoint (the balancer at ratio 0, the sidecar at ratio 1).
func trFleet(t *testing.T, bin, endpoint string) (*btBalancer, *scSidecar, *trEngineTap) {
	t.Helper()
	bal := trStartBalancer(t, bin, "balancer-tr", fmt.Sprintf("observability:\n  otlp_endpoint: %s\n  sample_ratio: 0\n", endpoint))
	sim := btStartSim(t, bin, "sim-tr", 2000)
	tap := trStartTap(t, sim.url)
	sc := scStartSidecar(t, bin, tap.url, sim.pub, sim.replay, "--node-name", "replica-0", "--join", bal.gossip,
		"--model", "e2e-model", "--otlp-endpoint", endpoint, "--trace-sample-ratio", "1")
	scWait(t, "balancer sees the replica healthy", func() error { return bal.replicasHealthy(1) })
	return bal, sc, tap
}

// trPost sends a completion with the given traceparent ("" for none).
func trPost(t *testing.T, url, traceparent, prompt string) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":4}`, prompt)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("Traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion: %s", resp.Status)
	}
}

// TestTracesThroughTheFleet runs the real binaries with an OTLP receiver in
// the test: a client's sampled traceparent is continued by the balancer
// (server span), its attempt span carries the routing decision, the
// sidecar's span is the attempt's child, and the engine receives the
// sidecar's span as its parent. A request without a traceparent at the
// balancer's ratio 0 is not traced anywhere, though the sidecar's own ratio
// is 1: the balancer's decision travels with the request.
func TestTracesThroughTheFleet(t *testing.T) {
	bin := scBuild(t)
	rcv := otlptest.Start()
	defer rcv.Close()
	bal, _, tap := trFleet(t, bin, rcv.URL)

	const trace, client = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
	trPost(t, bal.url, "00-"+trace+"-"+client+"-01", strings.Repeat("trace me through the fleet. ", 8))
	trPost(t, bal.url, "", "not sampled at ratio 0")

	var server, attempt, side otlptest.Span
	scWait(t, "the balancer's and the sidecar's spans", func() error {
		server, attempt, side = otlptest.Span{}, otlptest.Span{}, otlptest.Span{}
		for _, s := range rcv.Spans() {
			if s.TraceID != trace {
				return fmt.Errorf("span %s of %s in trace %s: only the client's trace is sampled", s.Name, s.Service, s.TraceID)
			}
			switch {
			case s.Service == "inferrail-balancer" && s.Kind == "SPAN_KIND_SERVER":
				server = s
			case s.Service == "inferrail-balancer" && s.Kind == "SPAN_KIND_CLIENT":
				attempt = s
			case s.Service == "inferrail-sidecar":
				side = s
			}
		}
		if server.SpanID == "" || attempt.SpanID == "" || side.SpanID == "" {
			return fmt.Errorf("have server %q, attempt %q, sidecar %q", server.SpanID, attempt.SpanID, side.SpanID)
		}
		return nil
	})
	if server.ParentID != client || server.Name != "POST /v1/completions" || server.Attrs["http.response.status_code"] != "200" {
		t.Errorf("balancer server span %+v: want the client's span as parent", server)
	}
	if attempt.ParentID != server.SpanID {
		t.Errorf("attempt span's parent %s, want the server span %s", attempt.ParentID, server.SpanID)
	}
	want := map[string]string{"inferrail.route.policy": "cost_model", "inferrail.route.candidates": "1",
		"inferrail.route.winner": "replica-0", "inferrail.attempt": "1"}
	for k, v := range want {
		if attempt.Attrs[k] != v {
			t.Errorf("attempt %s = %q, want %q (all: %v)", k, attempt.Attrs[k], v, attempt.Attrs)
		}
	}
	for _, k := range []string{"inferrail.route.predicted_cached_tokens", "inferrail.route.estimated_ttft_seconds", "inferrail.route.reason"} {
		if attempt.Attrs[k] == "" {
			t.Errorf("attempt lacks %s: %v", k, attempt.Attrs)
		}
	}
	if side.ParentID != attempt.SpanID || side.Kind != "SPAN_KIND_SERVER" || side.Attrs["inferrail.origin"] != "balancer-tr" {
		t.Errorf("sidecar span %+v: want the attempt %s as parent", side, attempt.SpanID)
	}
	seen := tap.traceparents()
	if len(seen) != 2 {
		t.Fatalf("the engine saw %d completions, want 2: %v", len(seen), seen)
	}
	if w := "00-" + trace + "-" + side.SpanID + "-01"; seen[0] != w {
		t.Errorf("the engine's traceparent %q, want %q (the sidecar's span)", seen[0], w)
	}
	if p := strings.Split(seen[1], "-"); len(p) != 4 || p[3] != "00" || p[1] == trace {
		t.Errorf("the unsampled request reached the engine with traceparent %q, want a new trace flagged unsampled", seen[1])
	}
}

// TestTracesCollectorDown points the fleet at a collector that is not
// there: every request still succeeds, each binary warns once however many
// batches fail, and once a collector listens on that address the spans flow
// again, said once.
func TestTracesCollectorDown(t *testing.T) {
	bin := scBuild(t)
	port := scFreePort(t)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	bal, sc, _ := trFleet(t, bin, endpoint)
	tp := func(i int) string { return fmt.Sprintf("00-%032x-%016x-01", i+1, i+1) }
	for i := range 20 {
		trPost(t, bal.url, tp(i), fmt.Sprintf("request %d while the collector is down", i))
	}
	scWait(t, "failed exports counted", func() error {
		if n := btMetric(t, bal, "inferrail_tracing_spans_exported_total", `result="failed"`); n < 1 {
			return fmt.Errorf("balancer counted %v failed spans", n)
		}
		if n := scMetric(t, sc, "inferrail_tracing_spans_exported_total", `result="failed"`); n < 1 {
			return fmt.Errorf("sidecar counted %v failed spans", n)
		}
		return nil
	})
	for i := 20; i < 40; i++ { // a second round of failed batches: still one warning
		trPost(t, bal.url, tp(i), fmt.Sprintf("request %d while the collector is down", i))
	}
	before := btMetric(t, bal, "inferrail_tracing_spans_exported_total", `result="failed"`)
	scWait(t, "a second failed batch", func() error {
		if n := btMetric(t, bal, "inferrail_tracing_spans_exported_total", `result="failed"`); n <= before {
			return fmt.Errorf("failed spans %v, want more than %v", n, before)
		}
		return nil
	})
	for _, p := range []*scProc{bal.proc, sc.proc} {
		if n := trCount(t, p, "trace export failed: spans are dropped"); n != 1 {
			t.Errorf("%s warned %d times, want once", p.name, n)
		}
	}

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("the collector's port was taken meanwhile: %v", err)
	}
	rcv := otlptest.Serve(ln)
	defer rcv.Close()
	trPost(t, bal.url, tp(99), "after the collector is back")
	scWait(t, "spans after the collector is back", func() error {
		for _, s := range rcv.Spans() {
			if s.TraceID == fmt.Sprintf("%032x", 100) && s.Service == "inferrail-sidecar" {
				return nil
			}
		}
		return fmt.Errorf("%d spans, none of the last request's sidecar span yet", len(rcv.Spans()))
	})
	scWait(t, "the recovery said once", func() error {
		for _, p := range []*scProc{bal.proc, sc.proc} {
			if n := trCount(t, p, "trace export works again"); n != 1 {
				return fmt.Errorf("%s said it recovered %d times", p.name, n)
			}
		}
		return nil
	})
}

// trCount counts the lines of p's log that contain s.
func trCount(t *testing.T, p *scProc, s string) int {
	t.Helper()
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}
