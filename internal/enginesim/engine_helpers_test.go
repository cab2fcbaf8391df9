package enginesim

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// coreRecSink records KV events as strings, one per event, "E" closing a step.
type coreRecSink struct {
	mu  sync.Mutex
	evs []string
}

func (r *coreRecSink) BlockStored(hashes []uint64, parent *uint64, tokens []uint32, blockSize int, lora string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, coreFmtStored(hashes, parent, tokens, blockSize, lora))
}

func (r *coreRecSink) BlockRemoved(hash uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, fmt.Sprintf("R %x", hash))
}

func (r *coreRecSink) AllBlocksCleared() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, "C")
}

func (r *coreRecSink) EndStep(time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, "E")
}

func (r *coreRecSink) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.evs...)
}

func coreFmtStored(hashes []uint64, parent *uint64, tokens []uint32, blockSize int, lora string) string {
	var b strings.Builder
	b.WriteString("S")
	if parent != nil {
		fmt.Fprintf(&b, " p=%x", *parent)
	} else {
		b.WriteString(" p=nil")
	}
	for _, h := range hashes {
		fmt.Fprintf(&b, " %x", h)
	}
	fmt.Fprintf(&b, " bs=%d lora=%q toks=%v", blockSize, lora, tokens)
	return b.String()
}

// coreStep runs one engine step synchronously at time.Now() with zero
// duration (the test drives the engine instead of Run). It reports whether
// the step did anything.
func coreStep(e *Engine) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	p := e.schedule(now)
	if len(p.items) == 0 && p.preempted == 0 {
		return false
	}
	p.end = now
	if e.stepHook != nil {
		e.stepHook(p)
	}
	e.apply(p)
	return true
}

// coreDrain reads every Output of a stream that is already available.
func coreDrain(out <-chan Output) (toks []uint32, last Output, closed bool) {
	for {
		select {
		case o, ok := <-out:
			if !ok {
				return toks, last, true
			}
			toks = append(toks, o.Tokens...)
			last = o
		default:
			return toks, last, false
		}
	}
}

// coreTestConfig is a small ZeroLatency engine.
func coreTestConfig() EngineConfig {
	c := DefaultEngineConfig()
	c.Model = "m"
	c.ZeroLatency = true
	return c
}

func coreMustEngine(t testing.TB, cfg EngineConfig, m *Metrics, sink KVEventSink) *Engine {
	t.Helper()
	e, err := NewEngine(cfg, nil, m, sink)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return e
}

// coreGen returns a generator that never emits EOS (EOS is 0, tokens are >= 1).
func coreGen(base uint32) func(int) uint32 {
	return func(i int) uint32 { return base + uint32(i%1000) + 1 }
}

func coreTokens(start, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(start + i)
	}
	return out
}

// coreMetricValue returns the value of a collector holding one counter or gauge.
func coreMetricValue(t testing.TB, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatalf("write metric: %v", err)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("metric is neither a counter nor a gauge")
	return 0
}
