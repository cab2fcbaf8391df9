package enginesim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// chunkRecorder is a ResponseWriter that signals once it has seen n writes.
type chunkRecorder struct {
	mu     sync.Mutex
	h      http.Header
	writes int
	n      int
	seen   chan struct{}
}

func newChunkRecorder(n int) *chunkRecorder {
	return &chunkRecorder{h: http.Header{}, n: n, seen: make(chan struct{})}
}

func (c *chunkRecorder) Header() http.Header { return c.h }
func (c *chunkRecorder) WriteHeader(int)     {}
func (c *chunkRecorder) Flush()              {}
func (c *chunkRecorder) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	if c.writes == c.n {
		close(c.seen)
	}
	return len(p), nil
}

// TestDisconnectAbortsSequence: a client that goes away mid-stream (or while
// waiting for a non-streaming answer) frees its engine slot and blocks at
// once, and the engine counts the request as finished_reason="abort".
func TestDisconnectAbortsSequence(t *testing.T) {
	for _, stream := range []bool{true, false} {
		name := "non-streaming"
		if stream {
			name = "streaming"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := simTestConfig()
				cfg.Engine.ZeroLatency = false // real step times, on synctest's fake clock
				h := newSimHarness(t, cfg)
				ctx, cancel := context.WithCancel(context.Background())
				body := `{"messages":[{"role":"user","content":"write a long essay"}],"max_tokens":3000,"ignore_eos":true,"stream":` +
					map[bool]string{true: "true", false: "false"}[stream] + `}`
				req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)).WithContext(ctx)
				w := newChunkRecorder(3) // role chunk + two tokens
				done := make(chan struct{})
				go func() {
					h.fe.ServeHTTP(w, req)
					close(done)
				}()
				if stream {
					<-w.seen
				} else {
					// Let fake time pass: RequestOverhead, the prefill and a
					// few decode steps (inside the bubble this takes no real time).
					time.Sleep(100 * time.Millisecond)
				}
				load := h.engines[0].Load()
				if load.Running != 1 || load.FreeBlocks == load.TotalBlocks {
					t.Fatalf("before disconnect: load %+v, want one running sequence holding blocks", load)
				}
				cancel()
				<-done
				synctest.Wait()
				load = h.engines[0].Load()
				if load.Running+load.Waiting+load.Pending != 0 || load.FreeBlocks != load.TotalBlocks {
					t.Errorf("after disconnect: load %+v, want an idle engine with every block free", load)
				}
				if got := counterValue(t, h.reg, "vllm:request_success_total", map[string]string{"finished_reason": "abort"}); got != 1 {
					t.Errorf("request_success_total{finished_reason=abort} = %v, want 1", got)
				}
				if got := h.fe.ranks[0].inflight.Load(); got != 0 {
					t.Errorf("front end still counts %d in flight", got)
				}
				h.close()
			})
		})
	}
}
