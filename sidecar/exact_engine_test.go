package sidecar

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// runPipeline starts p with a fake subscriber that runs the functions sent
// on the returned channel, one at a time, and returns when each is done.
func runPipeline(t *testing.T, p *exactPipeline) func(func(*exactPipeline)) {
	t.Helper()
	step := make(chan func(*exactPipeline))
	done := make(chan struct{})
	p.subscribe = func(ctx context.Context, p *exactPipeline) error {
		for f := range step {
			f(p)
			done <- struct{}{}
		}
		return nil
	}
	errc := make(chan error, 1)
	go func() { errc <- p.Run(t.Context()) }()
	t.Cleanup(func() {
		close(step)
		if err := <-errc; err != nil {
			t.Error(err)
		}
	})
	return func(f func(*exactPipeline)) { step <- f; <-done }
}

func newTestPipeline(t *testing.T, cfg Config) (*exactPipeline, *prometheus.Registry) {
	t.Helper()
	cfg.KVEvents.Endpoint = "tcp://127.0.0.1:5557"
	reg := prometheus.NewRegistry()
	p, err := newExactPipeline(cfg, func(context.Context) (string, error) { return "m", nil },
		&setSink{set: map[kvblock.Hash]int{}}, slog.New(slog.DiscardHandler), reg, newMetrics(prometheus.NewRegistry(), nil))
	if err != nil {
		t.Fatal(err)
	}
	return p, reg
}

func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return v
}

// storedRun is a BlockStored of n blocks of bs tokens starting at token
// first, at the root of the chain (parent nil).
func storedRun(first uint64, n, bs int) engine.BlockStored {
	ev := engine.BlockStored{BlockSize: bs, Medium: engine.MediumGPU}
	for i := range n {
		ev.EngineHashes = append(ev.EngineHashes, first+uint64(i))
	}
	for i := range n * bs {
		ev.Tokens = append(ev.Tokens, uint32(first)*1000+uint32(i))
	}
	return ev
}

func batch(seq uint64, evs ...engine.Event) engine.Batch { return engine.Batch{Seq: seq, Events: evs} }

// A partial block (block_size 8 < the engine's 16) arriving first does not
// fix the block size: the engine's (config, then metrics) is the one used,
// before and after AllBlocksCleared.
func TestExactBlockSizeIsTheEngines(t *testing.T) {
	cfg := DefaultConfig() // block_size 16, as the engine's metrics say
	p, _ := newTestPipeline(t, cfg)
	step := runPipeline(t, p)
	for round := range 2 {
		step(func(p *exactPipeline) {
			p.applyBatch(batch(uint64(3*round), storedRun(100, 1, 8)))    // a partial entry
			p.applyBatch(batch(uint64(3*round+1), storedRun(200, 4, 16))) // four full blocks
		})
		if st := p.Status(); st.Blocks != 4 || !st.Complete {
			t.Errorf("round %d: %d blocks held (complete %v), want the 4 full 16-token blocks", round, st.Blocks, st.Complete)
		}
		step(func(p *exactPipeline) { p.applyBatch(batch(uint64(3*round+2), engine.AllBlocksCleared{})) })
	}
}

// The engine's metrics are authoritative: when they report another block
// size than the one the set started with, blocks hashed with the wrong size
// are dropped and the set is incomplete until the engine clears the rank.
func TestExactBlockSizeFromMetrics(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize = 8 // wrong
	p, _ := newTestPipeline(t, cfg)
	step := runPipeline(t, p)
	step(func(p *exactPipeline) { p.applyBatch(batch(0, storedRun(100, 2, 8))) })
	step(func(p *exactPipeline) { p.SetEngine(16, 0) })
	if st := p.Status(); st.Blocks != 0 || st.Complete {
		t.Errorf("after the engine said 16: %d blocks, complete %v; want 0, incomplete", st.Blocks, st.Complete)
	}
	step(func(p *exactPipeline) {
		p.applyBatch(batch(1, engine.AllBlocksCleared{}))
		p.applyBatch(batch(2, storedRun(200, 3, 16)))
	})
	if st := p.Status(); st.Blocks != 3 || !st.Complete {
		t.Errorf("after AllBlocksCleared: %d blocks, complete %v; want 3, complete", st.Blocks, st.Complete)
	}
}

// A rank that holds more blocks than the engine's capacity has diverged
// from the engine: it is cleared and reported incomplete.
func TestExactCapacityBound(t *testing.T) {
	p, reg := newTestPipeline(t, DefaultConfig())
	step := runPipeline(t, p)
	step(func(p *exactPipeline) { p.SetEngine(16, 10) })
	step(func(p *exactPipeline) { p.applyBatch(batch(0, storedRun(100, 8, 16))) })
	if st := p.Status(); st.Blocks != 8 || !st.Complete {
		t.Fatalf("under capacity: %d blocks, complete %v; want 8, complete", st.Blocks, st.Complete)
	}
	step(func(p *exactPipeline) { p.applyBatch(batch(1, storedRun(200, 3, 16))) })
	if st := p.Status(); st.Blocks != 0 || st.Complete {
		t.Errorf("over capacity (11 > 10): %d blocks, complete %v; want 0, incomplete", st.Blocks, st.Complete)
	}
	if v := gathered(t, reg, "inferrail_sidecar_blockset_capacity_overflows_total"); v != 1 {
		t.Errorf("overflows = %v, want 1", v)
	}
}
