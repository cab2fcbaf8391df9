package enginesim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkStreamingLoopback measures requests per second of the whole
// simulator (HTTP/1.1 on loopback, streaming chat, ZeroLatency engine) with
// concurrent keep-alive clients. Each request streams 16 tokens.
//
//	go test ./internal/enginesim -run '^$' -bench BenchmarkStreamingLoopback -benchtime 5s
func BenchmarkStreamingLoopback(b *testing.B) {
	for _, clients := range []int{16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			cfg := simTestConfig()
			cfg.Host = "127.0.0.1"
			cfg.Engine.NumGPUBlocks = 16384
			ctx, cancel := context.WithCancel(context.Background())
			addrc := make(chan string, 1)
			errc := make(chan error, 1)
			cfg.OnListening = func(a string) { addrc <- a }
			go func() { errc <- Run(ctx, cfg, nil) }()
			url := "http://" + <-addrc + "/v1/chat/completions"
			tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
			c := &http.Client{Transport: tr}
			var n atomic.Int64
			b.SetParallelism((clients + 1) / 2) // GOMAXPROCS (2) × parallelism goroutines
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					body := fmt.Sprintf(`{"messages":[{"role":"user","content":"request %d asks something"}],"max_tokens":16,"ignore_eos":true,"stream":true}`, i)
					resp, err := c.Post(url, "application/json", strings.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			b.StopTimer()
			tr.CloseIdleConnections()
			cancel()
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
		})
	}
}
