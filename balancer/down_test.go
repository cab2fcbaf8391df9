package balancer

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestReplicaDownEverywhereWaits: when the balancer takes out the only
// replica while a request waits on it, the request waits for a replica to be
// back (within timeouts.route) instead of failing with 502.
func TestReplicaDownEverywhereWaits(t *testing.T) {
	var calls atomic.Int64
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-r.Context().Done() // the first attempt hangs until cut
			return
		}
		okHandler(w, r)
	})
	cfg := testConfig(up.srv.URL)
	cfg.Health.FailureThreshold = 1
	cfg.Health.MaxEjectedShare = 1
	cfg.Health.BaseEjection = 100 * time.Millisecond
	b, srv := newTestBalancer(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = b.fleet.Run(ctx) }() // readmits the replica when its ejection ends
	type result struct {
		code int
		body string
	}
	done := make(chan result, 1)
	go func() {
		resp, body := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":"x"}`)
		done <- result{resp.StatusCode, body}
	}()
	<-up.hits
	b.fleet.ReportFailure(b.fleet.Snapshot().Replica("r0")) // ejected: the attempt is cut
	got := <-done
	if got.code != 200 || got.body != `{"ok":true}` {
		t.Fatalf("%d %q; want the request answered once the replica is back", got.code, got.body)
	}
}
