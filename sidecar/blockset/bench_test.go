package blockset

import (
	"math/rand/v2"
	"testing"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// BenchmarkApply stores chains of 4 blocks of 16 tokens (each continuing the
// previous chain, as a growing conversation does) and evicts as many, so the
// set stays at a steady size of about 20,000 blocks.
func BenchmarkApply(b *testing.B) {
	const (
		bs         = 16
		perEvent   = 4
		steadySize = 20000
	)
	s, err := New(Config{Model: "m", BlockSize: bs}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var next uint64 = 1
	var held []uint64
	var parent *uint64
	mk := func() engine.Batch {
		tokens := make([]uint32, perEvent*bs)
		for i := range tokens {
			tokens[i] = r.Uint32N(150000)
		}
		ev := engine.BlockStored{Parent: parent, Tokens: tokens, BlockSize: bs, Medium: engine.MediumGPU}
		for range perEvent {
			ev.EngineHashes = append(ev.EngineHashes, next)
			held = append(held, next)
			next++
		}
		last := ev.EngineHashes[perEvent-1]
		parent = &last
		if r.IntN(8) == 0 {
			parent = nil // a new conversation
		}
		evs := []engine.Event{ev}
		for len(held) > steadySize {
			evs = append(evs, engine.BlockRemoved{EngineHashes: held[:1], Medium: engine.MediumGPU})
			held = held[1:]
		}
		return engine.Batch{Events: evs}
	}
	for len(held) < steadySize {
		s.Apply(mk())
	}
	batches := make([]engine.Batch, b.N)
	for i := range batches {
		batches[i] = mk()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Apply(batches[i])
		if i%1024 == 0 {
			_, _ = s.Drain(nil)
		}
	}
	b.ReportMetric(float64(b.N*perEvent)/b.Elapsed().Seconds(), "blocks/s")
}
