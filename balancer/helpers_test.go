package balancer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// testConfig returns a config with static replicas at urls serving model
// "m" (alias "alias-m", builtin:sim tokenizer), no gossip and no probes.
func testConfig(urls ...string) Config {
	cfg := DefaultConfig()
	cfg.Gossip.Enabled = false
	cfg.Health.ProbeInterval = 0
	cfg.Retry.BackoffBase = time.Millisecond
	cfg.Retry.BackoffMax = 2 * time.Millisecond
	m := defaultModel()
	m.Name, m.Aliases, m.Tokenizer = "m", []string{"alias-m"}, "builtin:sim"
	cfg.Models = []ModelConfig{m}
	for i, u := range urls {
		cfg.Replicas = append(cfg.Replicas, ReplicaConfig{Name: "r" + string(rune('0'+i)), URL: u, Models: []string{"m"}})
	}
	return cfg
}

// newTestBalancer returns a balancer for cfg and a test server for its
// client handler.
func newTestBalancer(t *testing.T, cfg Config) (*Balancer, *httptest.Server) {
	t.Helper()
	reg := prometheus.NewRegistry()
	b, err := New(cfg, nil, reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(b.proxy.Close)
	return b, srv
}

// newAdminServer returns a test server for b's admin handler, closed when
// the test ends.
func newAdminServer(t *testing.T, b *Balancer) *httptest.Server {
	t.Helper()
	admin := httptest.NewServer(b.AdminHandler())
	t.Cleanup(admin.Close)
	return admin
}

// upstream is a fake engine: it records requests and answers with handle.
type upstream struct {
	srv    *httptest.Server
	hits   chan *http.Request
	bodies chan []byte
}

func newUpstream(t *testing.T, handle http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{hits: make(chan *http.Request, 1000), bodies: make(chan []byte, 1000)}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.hits <- r
		u.bodies <- body
		handle(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func okHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"ok":true}`)
}

func statusHandler(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"error":{"message":"busy","type":"x","param":null,"code":503}}`)
	}
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", stringsReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hello there, a prompt long enough to fill a few blocks of sixteen tokens each for hashing"}],"max_tokens":3}`

// startStream answers an event stream's headers at once and returns a
// function that writes one token-bearing event of it.
func startStream(w http.ResponseWriter) (token func()) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	return func() {
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"x"}}]}`+"\n\n")
		fl.Flush()
	}
}
