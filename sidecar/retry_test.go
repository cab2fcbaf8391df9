package sidecar

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/staleconn/staleconntest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// pooledSignal tells when the data path is done with an engine response:
// the body was read to EOF (the transport put the connection back in its
// pool before the EOF was returned) and closed. The client may have the
// whole answer earlier, so a test that needs the next request to reuse the
// connection waits for this first.
type pooledSignal struct {
	next http.RoundTripper
	done chan struct{}
}

func (p *pooledSignal) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err == nil {
		resp.Body = signalCloser{resp.Body, p.done}
	}
	return resp, err
}

type signalCloser struct {
	io.ReadCloser
	done chan struct{}
}

func (s signalCloser) Close() error {
	err := s.ReadCloser.Close()
	s.done <- struct{}{}
	return err
}

// wait waits for one response to be done with (guard is a hang guard).
func (p *pooledSignal) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(guard):
		t.Fatal("the data path never closed the engine response")
	}
}

// retryProxy starts the data path with the sidecar's engine transports in
// front of target.
func retryProxy(t *testing.T, target string, cfg ProxyConfig) (*httptest.Server, *metrics, *pooledSignal) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics(prometheus.NewRegistry(), nil)
	pooled, fresh := newEngineTransport(cfg), newFreshTransport(cfg)
	t.Cleanup(pooled.CloseIdleConnections)
	sig := &pooledSignal{next: pooled, done: make(chan struct{}, 8)}
	insp := &promptInspector{model: func() string { return "m" }, blockSize: func() int { return 4 }}
	p := newProxy(u, cfg, newStaleConnRetry(sig, fresh, m.engineRetries.Inc), insp, nil, slog.New(slog.DiscardHandler), m)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, m, sig
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
	srv, m, sig := retryProxy(t, e.URL(), DefaultConfig().Proxy)
	first, second := `{"model":"m","prompt":"one"}`, `{"model":"m","prompt":"two"}`
	if code, body := postCompletion(t, srv, first); code != http.StatusOK || body != first {
		t.Fatalf("first request: %d %q", code, body)
	}
	sig.wait(t)
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
	srv, m, _ := retryProxy(t, e.URL(), DefaultConfig().Proxy)
	code, body := postCompletion(t, srv, `{"model":"m","prompt":"one"}`)
	if code != http.StatusBadGateway || !strings.Contains(body, `"type":"Bad Gateway"`) {
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
	cfg := DefaultConfig().Proxy
	cfg.MaxInspectBytes = 40 // the first body is read in full, the second is not
	srv, m, sig := retryProxy(t, e.URL(), cfg)
	if code, _ := postCompletion(t, srv, `{"model":"m","prompt":"one"}`); code != http.StatusOK {
		t.Fatalf("first request: %d", code)
	}
	sig.wait(t)
	if code, _ := postCompletion(t, srv, `{"model":"m","prompt":"a prompt too long to be inspected by the data path"}`); code != http.StatusBadGateway {
		t.Fatalf("second request: %d, want 502", code)
	}
	if got := e.Seen(); len(got) != 2 || testutil.ToFloat64(m.engineRetries) != 0 {
		t.Fatalf("engine saw %q, want 2 requests (no retry)", got)
	}
}
