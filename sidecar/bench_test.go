package sidecar

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkProxyCompletion measures one non-streaming completion through the
// data path over loopback HTTP/1.1 (prompt read, tokenized with builtin:sim,
// hashed, forwarded, answered), against an engine that answers at once.
func BenchmarkProxyCompletion(b *testing.B) {
	eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"choices":[{"text":"ok"}]}`)
	}))
	defer eng.Close()
	u, _ := url.Parse(eng.URL)
	m := newMetrics(prometheus.NewRegistry(), nil)
	cfg := DefaultConfig().Proxy
	insp := &promptInspector{tok: simTok, model: func() string { return "m" }, blockSize: func() int { return 16 }}
	approx := newApproxSet(1<<15, nil, nil)
	tr := newEngineTransport(cfg)
	defer tr.CloseIdleConnections()
	p := newProxy(u, cfg, tr, insp, approx, slog.New(slog.DiscardHandler), m)
	srv := httptest.NewServer(p)
	defer srv.Close()
	body := `{"model":"m","prompt":"` + strings.Repeat("a system prompt shared by many requests. ", 50) + `","max_tokens":16}`
	client := srv.Client()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := client.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkPromptInspect measures reading, tokenizing and hashing a 2,000-byte
// chat prompt.
func BenchmarkPromptInspect(b *testing.B) {
	insp := &promptInspector{tok: simTok, model: func() string { return "m" }, blockSize: func() int { return 16 }}
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"` + strings.Repeat("you are a helpful assistant. ", 70) + `"},{"role":"user","content":"hi"}]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := insp.inspect(body, true); !ok {
			b.Fatal("not parsed")
		}
	}
}

// BenchmarkApproxObserve measures recording a 40-block prompt that shares
// half its blocks with the previous ones, in a full set.
func BenchmarkApproxObserve(b *testing.B) {
	a := newApproxSet(20000, nil, nil)
	prompts := make([][]kvblock.Hash, 1024)
	for i := range prompts {
		for j := range 40 {
			h := kvblock.Hash(j)
			if j >= 20 {
				h = kvblock.Hash(i<<8 | j)
			}
			prompts[i] = append(prompts[i], h)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a.observePrompt(prompts[i%len(prompts) : i%len(prompts)+1])
		i++
	}
}
