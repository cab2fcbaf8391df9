package balancer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/enginesim"
	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/tokenize"
)

// startSim runs an in-process zero-latency simulator and returns its URL.
func startSim(b *testing.B) string {
	b.Helper()
	cfg := enginesim.DefaultConfig()
	cfg.Port = 0
	cfg.Engine.ZeroLatency = true
	addr := make(chan string, 1)
	cfg.OnListening = func(a string) { addr <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- enginesim.Run(ctx, cfg, nil) }()
	b.Cleanup(func() { cancel(); <-done })
	select {
	case a := <-addr:
		return "http://" + a
	case err := <-done:
		b.Fatalf("sim: %v", err)
	}
	return ""
}

// openLoop sends requests to url at rate per second for d, each timed from
// its scheduled send time to its last response byte, and returns the
// latencies sorted.
func openLoop(b *testing.B, client *http.Client, url, body string, rate int, d time.Duration) []time.Duration {
	b.Helper()
	n := int(d.Seconds() * float64(rate))
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			time.Sleep(w) // pacing of the offered load
		}
		wg.Go(func() {
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			lat[i] = time.Since(at)
			if err != nil {
				errMu.Lock()
				firstErr = err
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("request failed: %v", firstErr)
	}
	slices.Sort(lat)
	return lat
}

func pct(l []time.Duration, p float64) time.Duration { return l[min(int(p*float64(len(l))), len(l)-1)] }

// BenchmarkOverhead measures the latency the balancer adds over going
// direct to a zero-latency simulator, open loop at 1,000 and 5,000 req/s,
// with and without tokenization (cost_model routing). Run with -benchtime=1x:
// each sub-benchmark sends 2 s of traffic direct, then through the
// balancer, and reports the percentiles of both and their differences.
func BenchmarkOverhead(b *testing.B) {
	simURL := startSim(b)
	prompt := strings.Repeat("You are a careful assistant; answer briefly and cite the document. ", 30)
	body := fmt.Sprintf(`{"model":"sim-model","messages":[{"role":"system","content":%q},{"role":"user","content":"hi"}],"max_tokens":1}`, prompt)
	for _, rate := range []int{1000, 5000} {
		for _, tok := range []bool{false, true} {
			b.Run(fmt.Sprintf("rate=%d/tokenize=%v", rate, tok), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.Gossip.Enabled = false
				cfg.Health.ProbeInterval = 0
				m := defaultModel()
				m.Name = "sim-model"
				if tok {
					m.Tokenizer = "builtin:sim"
				}
				cfg.Models = []ModelConfig{m}
				cfg.Replicas = []ReplicaConfig{{Name: "sim", URL: simURL, Models: []string{"sim-model"}}}
				bal, err := New(cfg, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				front := httptest.NewServer(bal.Handler())
				defer front.Close()
				defer bal.proxy.Close()
				// At most 1,000 connections per host: beyond that requests
				// queue in the client, and the queueing counts in their
				// latency (measured from the scheduled send time).
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 1000}}
				defer client.CloseIdleConnections()
				// Warm both paths' connection pools.
				openLoop(b, client, simURL+"/v1/chat/completions", body, rate, 200*time.Millisecond)
				openLoop(b, client, front.URL+"/v1/chat/completions", body, rate, 200*time.Millisecond)
				b.ResetTimer()
				for range b.N {
					direct := openLoop(b, client, simURL+"/v1/chat/completions", body, rate, 2*time.Second)
					via := openLoop(b, client, front.URL+"/v1/chat/completions", body, rate, 2*time.Second)
					for _, p := range []struct {
						name string
						q    float64
					}{{"p50", 0.5}, {"p99", 0.99}} {
						d, v := pct(direct, p.q), pct(via, p.q)
						b.ReportMetric(float64(d.Microseconds()), p.name+"-direct-µs")
						b.ReportMetric(float64(v.Microseconds()), p.name+"-via-µs")
						b.ReportMetric(float64((v - d).Microseconds()), p.name+"-added-µs")
					}
				}
			})
		}
	}
}

// BenchmarkForward is the balancer's cost per request, closed loop: the
// handler (parse, tokenize, hash, pick, proxy, stream) against a fake
// upstream on loopback that answers a fixed body, with and without
// tokenization, and the same requests sent straight to the fake upstream
// for comparison.
func BenchmarkForward(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(okHandler))
	defer up.Close()
	prompt := strings.Repeat("You are a careful assistant; answer briefly and cite the document. ", 30)
	body := fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":%q},{"role":"user","content":"hi"}],"max_tokens":1}`, prompt)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	send := func(b *testing.B, url string) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	b.Run("direct", func(b *testing.B) { send(b, up.URL+"/v1/chat/completions") })
	for _, tok := range []bool{false, true} {
		b.Run(fmt.Sprintf("balancer/tokenize=%v", tok), func(b *testing.B) {
			cfg := testConfig(up.URL)
			if !tok {
				cfg.Models[0].Tokenizer = ""
			}
			bal, front := newBenchBalancer(b, cfg)
			defer front.Close()
			defer bal.proxy.Close()
			b.ReportAllocs()
			send(b, front.URL+"/v1/chat/completions")
		})
	}
}

func newBenchBalancer(b *testing.B, cfg Config) (*Balancer, *httptest.Server) {
	b.Helper()
	bal, err := New(cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	return bal, httptest.NewServer(bal.Handler())
}

// BenchmarkDecide is the routing work of one chat request without the HTTP
// hops: body fields, tokenization (builtin:sim, piece cache warm), block
// hashes, candidates from the fleet snapshot and the cost_model pick over 8
// replicas. body=once is the request path (the tokenizer decodes the body
// and the fields are read from that); body=twice is the former path, kept
// for comparison: parseFields, then the tokenizer decodes the bytes again.
func BenchmarkDecide(b *testing.B) {
	cfg := testConfig()
	for i := range 8 {
		cfg.Replicas = append(cfg.Replicas, ReplicaConfig{Name: fmt.Sprintf("r%d", i), URL: "http://127.0.0.1:1", Models: []string{"m"}})
	}
	bal, err := New(cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	prompt := strings.Repeat("You are a careful assistant; answer briefly and cite the document. ", 30)
	body := []byte(fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":%q},{"role":"user","content":"hi"}],"max_tokens":1}`, prompt))
	m := bal.cur().models.lookup("m", bal.fleet.Snapshot())
	sc := bal.getScratch()
	pick := func(b *testing.B, ids []uint32, salt string) {
		sc.hashes = m.hashes(sc.hashes[:0], ids, salt)
		now := time.Now()
		set := bal.fleet.Snapshot().Models["m"]
		sc.cands = set.Candidates(now, sc.cands)
		req := route.Request{Model: "m", Hashes: sc.hashes, BlockSize: 16, PromptTokens: len(ids), Now: now}
		if _, _, err := m.policy.Pick(&req, sc.cands, sc.rs); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("body=once", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, oerr := bal.resolveDecoded(body)
			if oerr != nil || p.reason != "" {
				b.Fatal(oerr, p.reason)
			}
			pick(b, p.ids, p.salt)
		}
	})
	b.Run("body=twice", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, err := parseFields(body)
			if err != nil || f.Model == nil {
				b.Fatal(err)
			}
			p, err := m.tok.Chat(body)
			if err != nil {
				b.Fatal(err)
			}
			pick(b, p.TokenIDs, "")
		}
	})
}

// resolveDecoded is parse's work for a chat body inside the pool, without
// the pool.
func (b *Balancer) resolveDecoded(body []byte) (parsed, *openai.Error) {
	dec, err := tokenize.DecodeBody(body)
	if err != nil {
		return parsed{}, openai.BadRequest("", "%v", err)
	}
	return b.resolve(kindChat, body, b.fleet.Snapshot(), dec, true)
}
