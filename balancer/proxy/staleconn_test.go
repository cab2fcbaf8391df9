package proxy

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/inferrail/inferrail/internal/staleconn/staleconntest"
)

// staleRetries is the exposition of the stale-connection retry counter at n.
func staleRetries(n string) string {
	return `
# HELP inferrail_balancer_upstream_stale_conn_retries_total Attempts sent again on a fresh connection because the kept-alive HTTP/1.1 connection to the replica closed before any response byte (an engine such as llama.cpp closed it while idle); not counted as failures.
# TYPE inferrail_balancer_upstream_stale_conn_retries_total counter
inferrail_balancer_upstream_stale_conn_retries_total ` + n + "\n"
}

// TestSendRetriesAClosedKeepAliveConnection: an HTTP/1.1 upstream (a static
// llama-server replica) closes the kept-alive connection on reading the
// second attempt without answering; Send still returns its answer, sent
// again whole on a fresh connection, instead of an error that would count
// against the replica and move the request off its cache. The retry is
// counted in inferrail_balancer_upstream_stale_conn_retries_total.
func TestSendRetriesAClosedKeepAliveConnection(t *testing.T) {
	srv := staleconntest.Start(t, 2)
	reg := prometheus.NewRegistry()
	p := New(DefaultConfig(), reg)
	defer p.Close()
	up := Upstream{Base: mustURL(t, srv.URL())}
	for _, body := range []string{`{"prompt":"one"}`, `{"prompt":"two"}`} {
		in := httptest.NewRequest("POST", "/v1/completions", nil)
		resp, err := p.Send(context.Background(), up, in, []byte(body), nil, nil)
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != body {
			t.Fatalf("answer %q, want %q", got, body)
		}
	}
	want := `1/1 {"prompt":"one"},1/2 {"prompt":"two"},2/1 {"prompt":"two"}`
	if got := strings.Join(srv.Seen(), ","); got != want {
		t.Fatalf("upstream saw %s, want %s", got, want)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(staleRetries("1"))); err != nil {
		t.Error(err)
	}
}

// TestStaleRetryNotCountedForAFreshConnection: a new connection that the
// upstream closes is a real failure: not retried, not counted.
func TestStaleRetryNotCountedForAFreshConnection(t *testing.T) {
	srv := staleconntest.Start(t, 1)
	reg := prometheus.NewRegistry()
	p := New(DefaultConfig(), reg)
	defer p.Close()
	in := httptest.NewRequest("POST", "/v1/completions", nil)
	if _, err := p.Send(context.Background(), Upstream{Base: mustURL(t, srv.URL())}, in, []byte(`{"prompt":"one"}`), nil, nil); err == nil {
		t.Fatal("no error from an upstream that closed a new connection")
	}
	if n := len(srv.Seen()); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(staleRetries("0"))); err != nil {
		t.Error(err)
	}
}
