package enginesim

import (
	"fmt"
	"testing"
)

// checkPoolInvariants verifies the block pool against the sequences that
// hold blocks: reference counts equal holders, the free queue holds exactly
// the unreferenced blocks, and the cache map agrees with the blocks.
func checkPoolInvariants(e *Engine) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pool
	holders := make([]int32, len(p.blocks))
	for _, q := range [][]*seq{e.running, e.waiting} {
		for _, s := range q {
			for _, id := range s.blocks {
				holders[id]++
			}
			if s.numCachedBlocks > len(s.blocks) {
				return fmt.Errorf("seq %s: %d cached of %d blocks", s.req.ID, s.numCachedBlocks, len(s.blocks))
			}
		}
	}
	n := 0
	prev := int32(-1)
	for id := p.head; id >= 0; id = p.blocks[id].next {
		b := p.blocks[id]
		if !b.inFree || b.ref != 0 || b.prev != prev || id == nullBlock {
			return fmt.Errorf("free queue block %d: %+v (prev %d)", id, b, prev)
		}
		prev = id
		n++
	}
	if n != p.nfree || prev != p.tail {
		return fmt.Errorf("free queue walk %d blocks ending at %d, nfree %d tail %d", n, prev, p.nfree, p.tail)
	}
	for id := 1; id < len(p.blocks); id++ {
		b := p.blocks[id]
		if b.ref != holders[id] {
			return fmt.Errorf("block %d: ref %d, held by %d sequences", id, b.ref, holders[id])
		}
		if (b.ref == 0) != b.inFree {
			return fmt.Errorf("block %d: ref %d but inFree %v", id, b.ref, b.inFree)
		}
	}
	cachedBlocks := 0
	for h, first := range p.cached {
		for id := first; id >= 0; id = p.blocks[id].dupNext {
			if b := p.blocks[id]; !b.isCached || b.hash != h {
				return fmt.Errorf("cache entry %x → block %d %+v", h, id, b)
			}
			cachedBlocks++
		}
	}
	for id := range p.blocks {
		if p.blocks[id].isCached {
			cachedBlocks--
		}
	}
	if cachedBlocks != 0 {
		return fmt.Errorf("cache map and block flags disagree by %d", cachedBlocks)
	}
	return nil
}

// FuzzEngineOps runs an arbitrary sequence of submissions, steps, aborts,
// resets and restarts on a tiny engine and checks the pool's invariants
// after every operation and that every stream ends.
func FuzzEngineOps(f *testing.F) {
	f.Add([]byte{0, 10, 3, 0, 40, 5, 1, 1, 1, 2, 0, 1, 1, 1, 3, 1, 4, 1})
	f.Add([]byte{0, 200, 20, 0, 200, 20, 0, 200, 20, 1, 1, 1, 1, 1, 1, 2, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		cfg := coreTestConfig()
		cfg.BlockSize = 4
		cfg.NumGPUBlocks = 24
		cfg.MaxNumBatchedTokens = 32
		cfg.MaxNumSeqs = 4
		cfg.MaxModelLen = 200
		e := coreMustEngine(t, cfg, nil, &coreRecSink{})
		var streams []*Stream
		for i := 0; i < len(ops); i++ {
			arg := func() int {
				if i+1 < len(ops) {
					i++
					return int(ops[i])
				}
				return 0
			}
			switch ops[i] % 5 {
			case 0:
				plen, maxTok := 1+arg()%60, 1+arg()%30
				st, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: coreTokens(arg()%8*16, plen), MaxTokens: maxTok, Generate: coreGen(uint32(i))})
				if err == nil {
					streams = append(streams, st)
				}
			case 1:
				coreStep(e)
			case 2:
				if len(streams) > 0 {
					streams[arg()%len(streams)].Abort("abort")
				}
			case 3:
				e.ResetPrefixCache()
			case 4:
				if arg()%4 == 0 {
					e.Restart()
				}
			}
			for _, st := range streams {
				coreDrain(st.Out)
			}
			if err := checkPoolInvariants(e); err != nil {
				t.Fatalf("after op %d: %v", i, err)
			}
		}
		for range 100000 {
			if !coreStep(e) {
				break
			}
			for _, st := range streams {
				coreDrain(st.Out)
			}
		}
		for i, st := range streams {
			if _, _, closed := coreDrain(st.Out); !closed {
				// Already-closed channels report closed on every read.
				t.Fatalf("stream %d never ended", i)
			}
		}
		if ld := e.Load(); ld.FreeBlocks != ld.TotalBlocks || ld.Running+ld.Waiting+ld.Pending != 0 {
			t.Fatalf("engine not idle at the end: %+v", ld)
		}
	})
}
