package enginesim

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// BenchmarkEngineZeroLatency measures the core alone (ZeroLatency, metrics
// on, no KV-event sink): each iteration submits 1,000 concurrent requests
// of 512 prompt tokens × 16 output tokens and runs them to completion with
// one reader goroutine per stream. shared=true gives every prompt the same
// 448-token prefix (prefix hits), shared=false makes every prompt distinct.
func BenchmarkEngineZeroLatency(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) {
			const n, promptLen, outLen = 1000, 512, 16
			seed := kvblock.NewSeed("m", "", "")
			prompts := make([][]uint32, n)
			for i := range prompts {
				if shared {
					prompts[i] = append(coreTokens(1, 448), coreTokens(1_000_000+i*64, 64)...)
				} else {
					prompts[i] = coreTokens(1+i*promptLen, promptLen)
				}
			}
			var steps, reqs int
			var elapsed time.Duration
			for b.Loop() {
				m, err := NewMetrics(prometheus.NewRegistry(), FlavorVLLM, "m")
				if err != nil {
					b.Fatal(err)
				}
				cfg := DefaultEngineConfig()
				cfg.ZeroLatency = true
				e := coreMustEngine(b, cfg, m, nil)
				e.stepHook = func(*stepPlan) { steps++ }
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				start := time.Now()
				go func() { done <- e.Run(ctx) }()
				var wg sync.WaitGroup
				for i := range n {
					st, err := e.Submit(&Request{Prompt: prompts[i], Seed: seed, MaxTokens: outLen, IgnoreEOS: true, Generate: coreGen(5)})
					if err != nil {
						b.Fatal(err)
					}
					wg.Go(func() {
						for range st.Out {
						}
					})
				}
				wg.Wait()
				elapsed += time.Since(start)
				reqs += n
				cancel()
				<-done
			}
			b.ReportMetric(float64(steps)/elapsed.Seconds(), "steps/s")
			b.ReportMetric(float64(reqs)/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(reqs*(promptLen+outLen))/elapsed.Seconds(), "tok/s")
		})
	}
}

// BenchmarkStepTime measures the latency model alone for a full step.
func BenchmarkStepTime(b *testing.B) {
	m := DefaultLatencyModel()
	pf := []PrefillChunk{{New: 4096, Cached: 1000}, {New: 3000, Cached: 0}}
	dc := make([]int, 256)
	for i := range dc {
		dc[i] = 2048
	}
	for b.Loop() {
		_ = m.StepTime(pf, dc)
	}
}
