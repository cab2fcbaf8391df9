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

	"github.com/inferrail/inferrail/internal/enginesim"
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
	var failed sync.WaitGroup
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
	failed.Wait()
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
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxIdleConns: 4096}}
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
