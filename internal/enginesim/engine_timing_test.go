package enginesim

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// coreStartEngine runs e until the test's bubble ends.
func coreStartEngine(t *testing.T, e *Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// TestIdleTTFTMatchesClosedForm checks, on fake time, that an idle engine's
// time to first token is LatencyModel.IdleTTFT for a grid of prompt lengths
// and cached fractions.
func TestIdleTTFTMatchesClosedForm(t *testing.T) {
	for _, n := range []int{256, 1024, 2048, 8192, 32768} {
		for _, frac := range []float64{0, 0.5, 0.9} {
			t.Run(fmt.Sprintf("len=%d/cached=%.1f", n, frac), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := DefaultEngineConfig()
					cfg.Model = "m"
					e := coreMustEngine(t, cfg, nil, nil)
					coreStartEngine(t, e)
					prompt := coreTokens(1, n)
					warmLen := int(frac * float64(n))
					if warmLen > 0 {
						st, err := e.Submit(&Request{ID: "warm", Prompt: prompt[:warmLen], MaxTokens: 1, Generate: coreGen(1 << 20)})
						if err != nil {
							t.Fatal(err)
						}
						for range st.Out {
						}
					}
					synctest.Wait() // the engine is idle

					arrival := time.Now()
					st, err := e.Submit(&Request{ID: "r", Prompt: prompt, MaxTokens: 4, Generate: coreGen(1 << 21), Arrival: arrival})
					if err != nil {
						t.Fatal(err)
					}
					first := <-st.Out
					got := time.Since(arrival)
					bs := cfg.BlockSize
					wantCached := min(warmLen/bs, (n-1)/bs) * bs
					want := cfg.Latency.IdleTTFT(n, wantCached, cfg.MaxNumBatchedTokens)
					if diff := got - want; diff < -want/100 || diff > want/100 {
						t.Errorf("TTFT = %v, want %v (closed form) within 1%%", got, want)
					}
					if ft := first.Time.Sub(arrival); ft != got {
						t.Errorf("Output.Time - Arrival = %v, want the receive time %v", ft, got)
					}
					if first.CachedTokens != wantCached || first.PromptTokens != n {
						t.Errorf("usage = prompt %d cached %d, want %d, %d", first.PromptTokens, first.CachedTokens, n, wantCached)
					}
					st.Abort("abort")
				})
			})
		}
	}
}

// TestLongPrefillSlowsDecodes checks that decodes sharing steps with a long
// chunked prefill see inter-token gaps equal to the mixed steps' StepTime.
func TestLongPrefillSlowsDecodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultEngineConfig()
		cfg.Model = "m"
		e := coreMustEngine(t, cfg, nil, nil)
		coreStartEngine(t, e)

		const numDecodes, promptLen = 8, 1024 // 8 × 1024 = one full step budget
		type rec struct {
			mu    sync.Mutex
			times []time.Time
		}
		recs := make([]*rec, numDecodes)
		var wg sync.WaitGroup
		for i := range numDecodes {
			st, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: coreTokens(100000*(i+1), promptLen), MaxTokens: 400, Generate: coreGen(7)})
			if err != nil {
				t.Fatal(err)
			}
			recs[i] = &rec{}
			wg.Add(1)
			go func(r *rec) {
				defer wg.Done()
				for o := range st.Out {
					r.mu.Lock()
					for range o.Tokens {
						r.times = append(r.times, time.Now())
					}
					r.mu.Unlock()
				}
			}(recs[i])
		}
		time.Sleep(200 * time.Millisecond) // decodes are running
		const longLen = 20000
		long, err := e.Submit(&Request{ID: "long", Prompt: coreTokens(1<<24, longLen), MaxTokens: 1, Generate: coreGen(9)})
		if err != nil {
			t.Fatal(err)
		}
		first := <-long.Out
		for range long.Out {
		}
		tLong := first.Time
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()

		chunk := cfg.MaxNumBatchedTokens - numDecodes
		numChunks := (longLen + chunk - 1) / chunk
		for i, r := range recs {
			r.mu.Lock()
			times := append([]time.Time(nil), r.times...)
			r.mu.Unlock()
			kL := -1
			for k, tm := range times {
				if tm.Equal(tLong) {
					kL = k
				}
			}
			if kL < numChunks {
				t.Fatalf("decode %d: no token at the long prefill's last step %v", i, tLong)
			}
			for j := range numChunks {
				k := kL - numChunks + 1 + j // token produced by the step with chunk j
				ctx := make([]int, numDecodes)
				for d := range ctx {
					ctx[d] = promptLen + k
				}
				n := min(chunk, longLen-j*chunk)
				want := cfg.Latency.StepTime([]PrefillChunk{{New: n, Cached: j * chunk}}, ctx)
				if got := times[k].Sub(times[k-1]); got != want {
					t.Errorf("decode %d token %d (chunk %d): ITL %v, want StepTime %v", i, k, j, got, want)
				}
				if pure := cfg.Latency.StepTime(nil, ctx); want <= pure {
					t.Errorf("mixed step %v not slower than a pure decode step %v", want, pure)
				}
			}
		}
		e.Restart() // end the decodes
		wg.Wait()
	})
}

// TestStepLoopCatchesUpAfterAStall: a step loop the machine woke late (here
// its step held up for 100 ms, on fake time) runs the steps it owes back to
// back, so the steps' ends stay one step time apart and the decode still
// ends when the latency model says; a stall longer than maxCatchUp is not
// made up. Re-anchoring after 20 ms, as the loop did before, lost the
// stall's 100 ms: the first case fails on it.
func TestStepLoopCatchesUpAfterAStall(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stall  time.Duration
		madeUp bool
	}{
		{"within the catch-up", 100 * time.Millisecond, true},
		{"beyond it", maxCatchUp + 500*time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultEngineConfig()
				cfg.Model = "m"
				e := coreMustEngine(t, cfg, nil, nil)
				steps := 0
				e.stepHook = func(*stepPlan) {
					if steps++; steps == 10 {
						time.Sleep(tc.stall) // the loop is held up, as by a busy machine
					}
				}
				coreStartEngine(t, e)
				const out = 40
				st, err := e.Submit(&Request{ID: "r", Prompt: coreTokens(1, 512), MaxTokens: out, Generate: coreGen(1 << 20)})
				if err != nil {
					t.Fatal(err)
				}
				var times []time.Time
				for o := range st.Out {
					if len(o.Tokens) > 0 {
						times = append(times, o.Time)
					}
				}
				if len(times) != out {
					t.Fatalf("%d tokens, want %d", len(times), out)
				}
				step := cfg.Latency.StepTime(nil, []int{600}) // one decode of about this length
				var widest time.Duration
				for i := 1; i < len(times); i++ {
					widest = max(widest, times[i].Sub(times[i-1]))
				}
				switch {
				case tc.madeUp && widest > 2*step:
					t.Errorf("widest gap between steps %v, want about one decode step (%v): the stall was not made up", widest, step)
				case !tc.madeUp && widest < tc.stall:
					t.Errorf("widest gap between steps %v, want the stall of %v: a loop that far behind re-anchors", widest, tc.stall)
				}
			})
		})
	}
}
