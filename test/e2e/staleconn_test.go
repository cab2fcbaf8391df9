package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// kaEngine is an HTTP/1.1 engine that answers every request, except that it
// closes a kept-alive connection, without a byte of answer, on the first
// POST that is not the first request of its connection: what llama-server
// does when its idle timeout fires as a request is written (docs/engines.md).
type kaEngine struct {
	ln net.Listener

	mu      sync.Mutex // protects the fields below
	dropped int        // POSTs dropped (at most 1)
	posts   int        // POSTs answered
}

func kaStartEngine(t *testing.T) *kaEngine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &kaEngine{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go e.serve(c)
		}
	}()
	return e
}

func (e *kaEngine) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		body := `{"status":"ok"}`
		if req.Method == http.MethodPost {
			e.mu.Lock()
			drop := n > 1 && e.dropped == 0
			if drop {
				e.dropped++
			} else {
				e.posts++
			}
			e.mu.Unlock()
			if drop {
				return
			}
			body = `{"id":"c","object":"chat.completion","created":1,"model":"e2e-model","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

func (e *kaEngine) counts() (dropped, posts int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dropped, e.posts
}

// TestBalancerStaleConnRetry: the real balancer in front of a static
// HTTP/1.1 replica that closes a kept-alive connection under a request.
// The client still gets its answer (sent again on a fresh connection), the
// replica is not charged with a failure, and the retry is counted in
// inferrail_balancer_upstream_stale_conn_retries_total.
func TestBalancerStaleConnRetry(t *testing.T) {
	bin := scBuild(t)
	e := kaStartEngine(t)
	b := tpStart(t, bin, "bal-staleconn", fmt.Sprintf("models:\n  - name: e2e-model\ngossip:\n  enabled: false\n"+
		"replicas:\n  - {name: engine, url: http://%s, models: [e2e-model]}\n", e.ln.Addr()))
	scWait(t, "balancer health", func() error { return b.replicasHealthy(1) })
	// Sequential requests reuse the pooled connection: the second POST at
	// the latest meets the closed one. A few more in case a probe held it.
	sent := 0
	for sent < 10 {
		resp, err := http.Post(b.url+"/v1/chat/completions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"model":"e2e-model","messages":[{"role":"user","content":"question %d"}]}`, sent)))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		sent++
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"chat.completion"`) {
			t.Fatalf("request %d: %s %s", sent, resp.Status, got)
		}
		if d, _ := e.counts(); d == 1 && sent >= 2 {
			break
		}
	}
	dropped, posts := e.counts()
	if dropped != 1 || posts != sent {
		t.Fatalf("the engine dropped %d and answered %d of %d requests; want 1 dropped and every one answered", dropped, posts, sent)
	}
	if n := btMetric(t, b, "inferrail_balancer_upstream_stale_conn_retries_total", ""); n != 1 {
		t.Errorf("inferrail_balancer_upstream_stale_conn_retries_total = %v, want 1", n)
	}
	if n := btMetric(t, b, "inferrail_balancer_retries_total", ""); n != 0 {
		t.Errorf("inferrail_balancer_retries_total = %v: the closed connection counted as a failed attempt", n)
	}
	if n := btMetric(t, b, "inferrail_balancer_requests_total", `outcome="ok"`); n != float64(sent) {
		t.Errorf("%v requests ok, want %d", n, sent)
	}
}
