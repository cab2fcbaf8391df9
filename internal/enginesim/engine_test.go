package enginesim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

func TestEngineConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*EngineConfig)
		want   []string // substrings of the error, nil for valid
	}{
		{name: "defaults", modify: func(*EngineConfig) {}},
		{name: "zero latency ignores model", modify: func(c *EngineConfig) { c.ZeroLatency = true; c.Latency = LatencyModel{} }},
		{name: "block size", modify: func(c *EngineConfig) { c.BlockSize = 0 }, want: []string{"engine.block_size must be > 0, got 0"}},
		{name: "every problem at once", modify: func(c *EngineConfig) {
			c.NumGPUBlocks = 1
			c.MaxNumSeqs = -3
			c.MaxNumBatchedTokens = 0
			c.MaxModelLen = 1
			c.Rank = -1
			c.Latency.LinearTokPerSec = 0
		}, want: []string{
			"engine.num_gpu_blocks must be >= 2 (block 0 is reserved), got 1",
			"engine.max_num_seqs must be > 0, got -3",
			"engine.max_num_batched_tokens must be > 0, got 0",
			"engine.max_model_len must be > 1, got 1",
			"engine.rank must be >= 0, got -1",
			"engine.latency.linear_tok_per_sec must be > 0 and finite, got 0",
		}},
		{name: "negative latency", modify: func(c *EngineConfig) { c.Latency.StepOverhead = -time.Millisecond; c.Latency.AttentionPerPairNS = -1 },
			want: []string{"engine.latency.step_overhead must be >= 0, got -1ms", "engine.latency.attention_per_pair_ns must be >= 0 and finite, got -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultEngineConfig()
			tt.modify(&c)
			err := c.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, missing %q", err, w)
				}
			}
		})
	}
}

func TestStepTimeMatchesPerfModel(t *testing.T) {
	m := DefaultLatencyModel()
	ctx := func(n, c int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = c
		}
		return out
	}
	// Values from docs/perf-model.md#what-the-model-gives, in ms.
	tests := []struct {
		name string
		got  time.Duration
		want float64
	}{
		{"idle prefill 256", m.IdleTTFT(256, 0, 8192) - m.RequestOverhead, 7.3},
		{"idle prefill 2048", m.IdleTTFT(2048, 0, 8192) - m.RequestOverhead, 47.3},
		{"idle prefill 8192", m.IdleTTFT(8192, 0, 8192) - m.RequestOverhead, 219.3},
		{"idle prefill 32768", m.IdleTTFT(32768, 0, 8192) - m.RequestOverhead, 1404.9},
		{"8k with 6k cached", m.IdleTTFT(8192, 6144, 8192) - m.RequestOverhead, 64.3},
		{"tpot b=1 ctx 1k", m.StepTime(nil, ctx(1, 1024)), 7.36},
		{"tpot b=64 ctx 4k", m.StepTime(nil, ctx(64, 4096)), 23.0},
		{"mixed 8128 + 64x2k", m.StepTime([]PrefillChunk{{New: 8128}}, ctx(64, 2048)), 226.0},
	}
	for _, tt := range tests {
		got := float64(tt.got) / 1e6
		if d := got - tt.want; d < -0.01*tt.want || d > 0.01*tt.want {
			t.Errorf("%s: %.2f ms, want %.2f ms (±1%%)", tt.name, got, tt.want)
		}
	}
	// A fully cached prompt still computes its last token.
	if got, want := m.IdleTTFT(100, 100, 8192), m.RequestOverhead+m.StepTime([]PrefillChunk{{New: 1, Cached: 99}}, nil); got != want {
		t.Errorf("IdleTTFT(fully cached) = %v, want %v", got, want)
	}
}

// TestStepTimeMonotone is a property test: more work never makes a step faster.
func TestStepTimeMonotone(t *testing.T) {
	m := DefaultLatencyModel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var pf []PrefillChunk
		var dc []int
		for range rng.IntN(4) {
			pf = append(pf, PrefillChunk{New: 1 + rng.IntN(4000), Cached: rng.IntN(30000)})
		}
		for range rng.IntN(50) {
			dc = append(dc, 1+rng.IntN(30000))
		}
		base := m.StepTime(pf, dc)
		more := m.StepTime(append(pf, PrefillChunk{New: 1 + rng.IntN(100), Cached: rng.IntN(100)}), append(dc, 1+rng.IntN(1000)))
		if more < base || base < m.StepOverhead+m.WeightFloor {
			t.Fatalf("StepTime not monotone: %v then %v (prefills %v decodes %v)", base, more, pf, dc)
		}
	}
}

func TestSubmitRejects(t *testing.T) {
	cfg := coreTestConfig()
	cfg.MaxModelLen = 100
	cfg.NumGPUBlocks = 5 // 4 usable × 16 = 64 tokens
	e := coreMustEngine(t, cfg, nil, nil)
	gen := coreGen(1)
	tests := []struct {
		name    string
		req     *Request
		tooLong bool
	}{
		{"nil", nil, false},
		{"empty prompt", &Request{MaxTokens: 1, Generate: gen}, false},
		{"no generator", &Request{Prompt: coreTokens(1, 3), MaxTokens: 1}, false},
		{"zero max tokens", &Request{Prompt: coreTokens(1, 3), Generate: gen}, false},
		{"over max model len", &Request{Prompt: coreTokens(1, 60), MaxTokens: 41, Generate: gen}, true},
		{"over kv capacity", &Request{Prompt: coreTokens(1, 60), MaxTokens: 6, Generate: gen}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Submit(tt.req)
			var pe *PromptTooLongError
			if tt.tooLong != errors.As(err, &pe) {
				t.Fatalf("Submit() = %v, want PromptTooLongError: %v", err, tt.tooLong)
			}
			if !tt.tooLong && !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("Submit() = %v, want ErrInvalidRequest", err)
			}
		})
	}
	if _, err := e.Submit(&Request{Prompt: coreTokens(1, 60), MaxTokens: 5, Generate: gen}); err != nil {
		t.Fatalf("Submit(exactly fits) = %v", err)
	}
}

// TestAbortFreesAtOnce aborts a sequence while the engine sleeps inside a
// step and checks that its slot and blocks are free immediately and that the
// abort is counted.
func TestAbortFreesAtOnce(t *testing.T) {
	for _, reason := range []string{"abort", "stop"} {
		t.Run(reason, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := prometheus.NewRegistry()
				m, err := NewMetrics(reg, FlavorVLLM, "m")
				if err != nil {
					t.Fatal(err)
				}
				cfg := DefaultEngineConfig()
				cfg.Model = "m"
				e := coreMustEngine(t, cfg, m, nil)
				coreStartEngine(t, e)
				st, err := e.Submit(&Request{ID: "a", Prompt: coreTokens(1, 1000), MaxTokens: 1000, Generate: coreGen(5)})
				if err != nil {
					t.Fatal(err)
				}
				<-st.Out
				<-st.Out
				time.Sleep(3 * time.Millisecond) // now inside the next step's sleep
				if ld := e.Load(); ld.Running != 1 || ld.FreeBlocks == ld.TotalBlocks {
					t.Fatalf("before abort: %+v", ld)
				}
				st.Abort(reason)
				ld := e.Load()
				if ld.Running != 0 || ld.Waiting != 0 || ld.FreeBlocks != ld.TotalBlocks || ld.KVUsage != 0 {
					t.Fatalf("after abort: %+v, want no running sequence and every block free", ld)
				}
				var last Output
				for o := range st.Out {
					last = o
				}
				if !last.Finished || last.FinishReason != reason {
					t.Fatalf("final output %+v, want finished with %q", last, reason)
				}
				if got := coreMetricValue(t, m.vllm.success.WithLabelValues("m", "0", reason)); got != 1 {
					t.Errorf("request_success_total{finished_reason=%q} = %v, want 1", reason, got)
				}
				if got := coreMetricValue(t, m.vllm.running.WithLabelValues("m", "0")); got != 0 {
					t.Errorf("num_requests_running = %v, want 0", got)
				}
				st.Abort("abort") // idempotent
				time.Sleep(time.Second)
				if got := coreMetricValue(t, m.vllm.success.WithLabelValues("m", "0", reason)); got != 1 {
					t.Errorf("after a second Abort: count %v, want 1", got)
				}
			})
		})
	}
}

// TestPreemptionCompletes exhausts KV so that sequences are preempted and
// checks that every sequence still produces exactly its tokens.
func TestPreemptionCompletes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, FlavorVLLM, "m")
	if err != nil {
		t.Fatal(err)
	}
	cfg := coreTestConfig()
	cfg.NumGPUBlocks = 11 // 10 usable blocks = 160 tokens
	e := coreMustEngine(t, cfg, m, nil)
	const n, maxTok = 3, 60
	streams := make([]*Stream, n)
	for i := range n {
		st, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: coreTokens(1000*(i+1), 64), MaxTokens: maxTok, Generate: coreGen(uint32(100 * i))})
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = st
	}
	got := make([][]uint32, n)
	var last [n]Output
	for range 10000 {
		if !coreStep(e) {
			break
		}
		for i, st := range streams {
			toks, o, _ := coreDrain(st.Out)
			got[i] = append(got[i], toks...)
			if o.Finished {
				last[i] = o
			}
		}
	}
	for i := range n {
		want := make([]uint32, maxTok)
		for k := range want {
			want[k] = coreGen(uint32(100 * i))(k)
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("sequence %d tokens (-want +got):\n%s", i, diff)
		}
		if last[i].FinishReason != "length" {
			t.Errorf("sequence %d finish %q, want length", i, last[i].FinishReason)
		}
	}
	if p := coreMetricValue(t, m.vllm.preemptions.WithLabelValues("m", "0")); p == 0 {
		t.Errorf("num_preemptions_total = 0, want > 0")
	}
	if ld := e.Load(); ld.FreeBlocks != ld.TotalBlocks {
		t.Errorf("blocks leaked: %+v", ld)
	}
}

// TestCapsNeverExceeded checks, on every step of a random workload, that the
// running batch never exceeds MaxNumSeqs and a step never exceeds the token
// budget.
func TestCapsNeverExceeded(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 20 {
		cfg := coreTestConfig()
		cfg.MaxNumSeqs = 1 + rng.IntN(8)
		cfg.MaxNumBatchedTokens = 8 + rng.IntN(200)
		cfg.NumGPUBlocks = 40 + rng.IntN(200)
		e := coreMustEngine(t, cfg, nil, nil)
		steps, maxSeen := 0, 0
		e.stepHook = func(p *stepPlan) {
			steps++
			if p.tokens > cfg.MaxNumBatchedTokens {
				t.Fatalf("trial %d: step with %d tokens > budget %d", trial, p.tokens, cfg.MaxNumBatchedTokens)
			}
			if len(e.running) > cfg.MaxNumSeqs || len(p.items) > cfg.MaxNumSeqs {
				t.Fatalf("trial %d: %d running, %d scheduled > max_num_seqs %d", trial, len(e.running), len(p.items), cfg.MaxNumSeqs)
			}
			maxSeen = max(maxSeen, len(e.running))
		}
		var streams []*Stream
		for i := range 30 {
			st, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: coreTokens(rng.IntN(1000), 1+rng.IntN(300)), MaxTokens: 1 + rng.IntN(40), Generate: coreGen(3)})
			if err != nil {
				continue
			}
			streams = append(streams, st)
		}
		for range 100000 {
			if !coreStep(e) {
				break
			}
			for _, st := range streams {
				coreDrain(st.Out)
			}
		}
		if steps == 0 || maxSeen == 0 {
			t.Fatalf("trial %d: no steps ran", trial)
		}
		if ld := e.Load(); ld.Running+ld.Waiting+ld.Pending != 0 {
			t.Fatalf("trial %d: work left: %+v", trial, ld)
		}
	}
}

// TestSlowReaderNeverBlocks leaves a stream unread for a whole long
// generation: the engine keeps stepping and the reader later gets every
// token, coalesced.
func TestSlowReaderNeverBlocks(t *testing.T) {
	e := coreMustEngine(t, coreTestConfig(), nil, nil)
	slow, err := e.Submit(&Request{ID: "slow", Prompt: coreTokens(1, 10), MaxTokens: 500, Generate: coreGen(0)})
	if err != nil {
		t.Fatal(err)
	}
	fast, err := e.Submit(&Request{ID: "fast", Prompt: coreTokens(50, 10), MaxTokens: 500, Generate: coreGen(0)})
	if err != nil {
		t.Fatal(err)
	}
	var fastToks []uint32
	for coreStep(e) {
		toks, _, _ := coreDrain(fast.Out)
		fastToks = append(fastToks, toks...)
	}
	toks, last, closed := coreDrain(slow.Out)
	if !closed || !last.Finished || last.FinishReason != "length" {
		t.Fatalf("slow stream: closed %v last %+v", closed, last)
	}
	if len(toks) != 500 || len(fastToks) != 500 {
		t.Fatalf("got %d slow and %d fast tokens, want 500 each", len(toks), len(fastToks))
	}
	for i, tok := range toks {
		if tok != coreGen(0)(i) {
			t.Fatalf("slow token %d = %d, want %d", i, tok, coreGen(0)(i))
		}
	}
}

// TestConcurrentSubmitAbort submits and aborts from many goroutines while
// the loop runs (run it with -race): every stream ends and the engine ends
// idle with every block free.
func TestConcurrentSubmitAbort(t *testing.T) {
	cfg := coreTestConfig()
	cfg.NumGPUBlocks = 200
	cfg.MaxNumSeqs = 8
	e := coreMustEngine(t, cfg, nil, &coreRecSink{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 20 {
				st, err := e.Submit(&Request{ID: fmt.Sprint(g, "-", i), Prompt: coreTokens(rng.IntN(50)*16, 1+rng.IntN(100)),
					MaxTokens: 1 + rng.IntN(50), Generate: coreGen(uint32(g))})
				if err != nil {
					t.Error(err)
					return
				}
				abortAfter := rng.IntN(4)
				n := 0
				for o := range st.Out {
					n++
					if n == abortAfter && !o.Finished {
						st.Abort("abort")
					}
				}
				if rng.IntN(10) == 0 {
					e.ResetPrefixCache()
				}
			}
		})
	}
	wg.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ld := e.Load(); ld.FreeBlocks != ld.TotalBlocks || ld.Running+ld.Waiting+ld.Pending != 0 {
		t.Fatalf("engine not idle: %+v", ld)
	}
	if _, err := e.Submit(&Request{Prompt: coreTokens(1, 3), MaxTokens: 1, Generate: coreGen(1)}); !errors.Is(err, ErrEngineStopped) {
		t.Fatalf("Submit after Run returned: %v, want ErrEngineStopped", err)
	}
}
