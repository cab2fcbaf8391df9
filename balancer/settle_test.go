package balancer

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A placement is predicted from the overlay until overlay.settle after its
// request's first byte, not for the whole overlay TTL: a prompt sent again
// within the grace is predicted fully cached on its replica, and after it
// (still well inside the TTL) only what the stale-summary fallback assumes.
func TestOverlaySettlesAfterFirstByte(t *testing.T) {
	up := newUpstream(t, okHandler)
	cfg := testConfig(up.srv.URL)
	b, srv := newTestBalancer(t, cfg)
	var offset atomic.Int64 // the balancer's clock runs ahead of real time by this
	b.now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("ab ", 400) + `"}],"max_tokens":3}`
	cached := func() int {
		t.Helper()
		resp, _ := post(t, srv.URL+"/v1/chat/completions", body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		n, err := strconv.Atoi(resp.Header.Get(HeaderCachedTokens))
		if err != nil {
			t.Fatalf("%s: %v", HeaderCachedTokens, err)
		}
		return n
	}
	cached() // placed, then settled at its first byte
	offset.Add(int64(500 * time.Millisecond))
	within := cached()
	offset.Add(int64(3 * time.Second)) // past settle (1s), inside the TTL (10s)
	after := cached()
	if within < 300 {
		t.Errorf("within the grace: %d cached tokens predicted, want the whole prompt (> 300)", within)
	}
	if after >= within {
		t.Errorf("after the grace: %d cached tokens predicted, want fewer than the %d the overlay gave", after, within)
	}
}
