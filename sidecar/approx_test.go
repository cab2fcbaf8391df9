package sidecar

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// setSink mirrors a block set from its change feed.
type setSink struct{ set map[kvblock.Hash]int }

func (s *setSink) blocksAdded(hs []kvblock.Hash, _ string) {
	for _, h := range hs {
		s.set[h]++
	}
}

func (s *setSink) blocksRemoved(hs []kvblock.Hash, _ string) {
	for _, h := range hs {
		s.set[h]--
		if s.set[h] == 0 {
			delete(s.set, h)
		}
	}
}

// naiveLRU is the reference model: a slice, most recent first.
type naiveLRU struct {
	cap   int
	items []kvblock.Hash
}

func (n *naiveLRU) observe(prompts [][]kvblock.Hash) {
	for _, hs := range prompts {
		for i := len(hs) - 1; i >= 0; i-- {
			if j := slices.Index(n.items, hs[i]); j >= 0 {
				n.items = slices.Delete(n.items, j, j+1)
			}
			n.items = slices.Insert(n.items, 0, hs[i])
		}
	}
	if len(n.items) > n.cap {
		n.items = n.items[:n.cap]
	}
}

func TestApproxSetAgainstModel(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		capacity := 1 + rng.IntN(40)
		sink := &setSink{set: map[kvblock.Hash]int{}}
		evicted := 0
		a := newApproxSet(capacity, sink, func(n int) { evicted += n })
		model := &naiveLRU{cap: capacity}
		for step := range 200 {
			if rng.IntN(20) == 0 {
				capacity = 1 + rng.IntN(40)
				a.setCapacity(capacity)
				model.cap = capacity
				model.observe(nil)
			} else {
				// Prompts share prefixes: chains from a few roots.
				var prompts [][]kvblock.Hash
				for range 1 + rng.IntN(2) {
					h := kvblock.Hash(rng.IntN(3))
					var hs []kvblock.Hash
					for range rng.IntN(12) {
						h = kvblock.Next(h, []uint32{uint32(rng.IntN(2))})
						hs = append(hs, h)
					}
					prompts = append(prompts, hs)
				}
				a.observePrompt(prompts)
				model.observe(prompts)
			}
			if diff := cmp.Diff(model.items, a.Blocks(), cmp.Comparer(func(x, y []kvblock.Hash) bool { return slices.Equal(x, y) })); diff != "" {
				t.Fatalf("seed %d step %d: blocks (-model +set):\n%s", seed, step, diff)
			}
			if len(sink.set) != a.Len() {
				t.Fatalf("seed %d step %d: sink holds %d blocks, set %d", seed, step, len(sink.set), a.Len())
			}
			for _, h := range model.items {
				if sink.set[h] != 1 || !a.Contains(h) {
					t.Fatalf("seed %d step %d: block %x: sink count %d, contains %v", seed, step, h, sink.set[h], a.Contains(h))
				}
			}
		}
	}
}

func TestApproxSetKeepsFirstBlocksLongest(t *testing.T) {
	a := newApproxSet(3, nil, nil)
	a.observePrompt([][]kvblock.Hash{{1, 2, 3, 4, 5}})
	if diff := cmp.Diff([]kvblock.Hash{1, 2, 3}, a.Blocks()); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	a.clear()
	if a.Len() != 0 {
		t.Errorf("Len after clear = %d", a.Len())
	}
}
