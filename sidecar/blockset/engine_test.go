package blockset

import (
	"testing"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// The configured block size holds against a partial entry that comes first,
// and after AllBlocksCleared.
func TestPartialFirstDoesNotSetTheBlockSize(t *testing.T) {
	s := newSet(t, 16)
	for round := range 2 {
		s.Apply(batch(0, stored([]uint64{1}, nil, toks(0, 8), 8))) // partial entry
		s.Apply(batch(0, stored([]uint64{2, 3, 4, 5}, nil, toks(0, 64), 16)))
		if s.Len() != 4 || s.BlockSize() != 16 {
			t.Errorf("round %d: Len %d block size %d, want 4 blocks of 16", round, s.Len(), s.BlockSize())
		}
		s.Apply(batch(0, engine.AllBlocksCleared{}))
	}
}

func TestSetBlockSizeClearsWhatWasHashedWrong(t *testing.T) {
	s := newSet(t, 8)
	s.Apply(batch(0, stored([]uint64{1, 2}, nil, toks(0, 16), 8)))
	s.SetBlockSize(8) // same: nothing happens
	if s.Len() != 2 || s.Incomplete() {
		t.Fatalf("same size: Len %d incomplete %v", s.Len(), s.Incomplete())
	}
	s.SetBlockSize(16)
	if s.Len() != 0 || !s.Incomplete() || s.BlockSize() != 16 {
		t.Errorf("new size: Len %d incomplete %v size %d, want 0, incomplete, 16", s.Len(), s.Incomplete(), s.BlockSize())
	}
	s.Apply(batch(0, engine.AllBlocksCleared{}))
	s.Apply(batch(0, stored([]uint64{3}, nil, toks(0, 16), 16)))
	if s.Len() != 1 || s.Incomplete() {
		t.Errorf("after the engine cleared: Len %d incomplete %v, want 1, complete", s.Len(), s.Incomplete())
	}
}

func TestCapacityBoundsEachRank(t *testing.T) {
	s := newSet(t, 4)
	s.SetCapacity(3)
	gpu := func(rank int, hs ...uint64) {
		s.Apply(batch(rank, stored(hs, nil, toks(int(hs[0])*100, 4*len(hs)), 4)))
	}
	gpu(0, 1, 2, 3)
	gpu(1, 10, 11, 12) // another rank has its own capacity
	// Offloaded copies and removals do not count against the GPU bound.
	s.Apply(batch(0, engine.BlockStored{EngineHashes: []uint64{1, 2, 3}, Medium: engine.MediumCPU}))
	s.Apply(batch(0, engine.BlockRemoved{EngineHashes: []uint64{3}, Medium: engine.MediumGPU}))
	gpu(0, 4)
	if s.Len() != 7 || s.Incomplete() || s.Stats().Overflows != 0 {
		t.Fatalf("at capacity: Len %d incomplete %v overflows %d, want 7, complete, 0", s.Len(), s.Incomplete(), s.Stats().Overflows)
	}
	gpu(0, 5)
	if s.Stats().Overflows != 1 || !s.Incomplete() || s.LenIn(engine.MediumGPU) != 3 {
		t.Errorf("over capacity: overflows %d incomplete %v GPU blocks %d, want 1, incomplete, rank 1's 3",
			s.Stats().Overflows, s.Incomplete(), s.LenIn(engine.MediumGPU))
	}
	s.SetCapacity(2) // rank 1 is over the new bound at once
	if s.Stats().Overflows != 2 || s.Len() != 0 {
		t.Errorf("lowered capacity: overflows %d Len %d, want 2, 0", s.Stats().Overflows, s.Len())
	}
}
