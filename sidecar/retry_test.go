package sidecar

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/staleconn/staleconntest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// retryProxy starts the data path with the sidecar's engine transports in
// front of target.
func retryProxy(t *testing.T, target string) (*httptest.Server, *metrics) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics(prometheus.NewRegistry(), nil)
	cfg := DefaultConfig().Proxy
	pooled, fresh := newEngineTransport(cfg), newFreshTransport(cfg)
	t.Cleanup(pooled.CloseIdleConnections)
	insp := &promptInspector{model: func() string { return "m" }, blockSize: func() int { return 4 }}
	p := newProxy(u, cfg, newStaleConnRetry(pooled, fresh, m.engineRetries.Inc), insp, nil, slog.New(slog.DiscardHandler), m)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, m
}

func postCompletion(t *testing.T, srv *httptest.Server, body string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDataPathRetriesAClosedKeepAliveConnection sends two completions through
// the data path; the engine closes the pooled connection on reading the
// second without answering. The client still gets the second answer: the
// request went again, whole, on a fresh connection, and was counted.
func TestDataPathRetriesAClosedKeepAliveConnection(t *testing.T) {
	e := staleconntest.Start(t, 2)
	srv, m := retryProxy(t, e.URL())
	first, second := `{"model":"m","prompt":"one"}`, `{"model":"m","prompt":"two"}`
	if code, body := postCompletion(t, srv, first); code != http.StatusOK || body != first {
		t.Fatalf("first request: %d %q", code, body)
	}
	if code, body := postCompletion(t, srv, second); code != http.StatusOK || body != second {
		t.Fatalf("second request: %d %q, want 200 with the echoed body", code, body)
	}
	want := []string{"1/1 " + first, "1/2 " + second, "2/1 " + second}
	if got := e.Seen(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("engine saw %q, want %q", got, want)
	}
	if n := testutil.ToFloat64(m.engineRetries); n != 1 {
		t.Fatalf("engine_retries_total = %v, want 1", n)
	}
}

// TestDataPathDoesNotRetryAFreshConnection: an engine that closes a new
// connection without answering is failing, not recycling connections: the
// client gets the data path's 502 and the request is not sent twice.
func TestDataPathDoesNotRetryAFreshConnection(t *testing.T) {
	e := staleconntest.Start(t, 1)
	srv, m := retryProxy(t, e.URL())
	code, body := postCompletion(t, srv, `{"model":"m","prompt":"one"}`)
	if code != http.StatusBadGateway || !strings.Contains(body, `"type":"BadGateway"`) {
		t.Fatalf("got %d %s, want an OpenAI-shaped 502", code, body)
	}
	if got := e.Seen(); len(got) != 1 {
		t.Fatalf("engine saw %q, want the request once", got)
	}
	if n := testutil.ToFloat64(m.engineRetries); n != 0 {
		t.Fatalf("engine_retries_total = %v, want 0", n)
	}
}

// TestDataPathDoesNotRetryAStreamedBody: a body too large to inspect is
// streamed to the engine and cannot be sent twice, so a pooled connection
// that closes under it fails the request (502) instead.
func TestDataPathDoesNotRetryAStreamedBody(t *testing.T) {
	e := staleconntest.Start(t, 2)
	u, _ := url.Parse(e.URL())
	m := newMetrics(prometheus.NewRegistry(), nil)
	cfg := DefaultConfig().Proxy
	cfg.MaxInspectBytes = 8
	pooled := newEngineTransport(cfg)
	t.Cleanup(pooled.CloseIdleConnections)
	insp := &promptInspector{model: func() string { return "m" }, blockSize: func() int { return 4 }}
	p := newProxy(u, cfg, newStaleConnRetry(pooled, newFreshTransport(cfg), m.engineRetries.Inc), insp, nil, slog.New(slog.DiscardHandler), m)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	if code, _ := postCompletion(t, srv, `{"model":"m","prompt":"one"}`); code != http.StatusOK {
		t.Fatalf("first request: %d", code)
	}
	if code, _ := postCompletion(t, srv, `{"model":"m","prompt":"a prompt too long to inspect"}`); code != http.StatusBadGateway {
		t.Fatalf("second request: %d, want 502", code)
	}
	if got := e.Seen(); len(got) != 2 {
		t.Fatalf("engine saw %q, want 2 requests (no retry)", got)
	}
}
