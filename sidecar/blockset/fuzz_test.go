package blockset

import (
	"testing"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// FuzzApply drives the set with events built from arbitrary bytes and checks
// its invariants: no panic, Len and LenIn agree with Blocks, and replaying the
// change feed gives the final set.
func FuzzApply(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2, 2, 3, 200, 100, 50})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := New(Config{Model: "m", BlockSize: 2}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		feed := map[Change]bool{}
		byte1 := func(i int) byte {
			if i < len(b) {
				return b[i]
			}
			return 0
		}
		media := []string{engine.MediumGPU, engine.MediumCPU, "x"}
		for i := 0; i+3 < len(b); i += 4 {
			op, x, y, z := b[i], byte1(i+1), byte1(i+2), byte1(i+3)
			rank := int(op>>4) % 3
			medium := media[int(z)%len(media)]
			switch op % 6 {
			case 0, 1: // store 1–3 blocks with small hashes and tokens
				n := int(x%3) + 1
				ev := engine.BlockStored{BlockSize: int(y%3) + 1, Medium: medium, GroupIdx: int(z>>6) % 2}
				for j := range n {
					ev.EngineHashes = append(ev.EngineHashes, uint64(x>>2)+uint64(j))
				}
				for j := range n * 2 {
					ev.Tokens = append(ev.Tokens, uint32(y>>4)+uint32(j%2))
				}
				if op%6 == 1 {
					p := uint64(y >> 3)
					ev.Parent = &p
				}
				if z&0x20 != 0 {
					ev.Tokens = nil
				}
				s.Apply(engine.Batch{Rank: rank, Events: []engine.Event{ev}})
			case 2, 3:
				s.Apply(engine.Batch{Rank: rank, Events: []engine.Event{engine.BlockRemoved{
					EngineHashes: []uint64{uint64(x >> 2)}, Medium: medium, GroupIdx: int(z>>6) % 2}}})
			case 4:
				s.Apply(engine.Batch{Rank: rank, Events: []engine.Event{engine.AllBlocksCleared{}}})
			case 5:
				s.ClearRank(rank, x%2 == 0)
			}
		}
		changes, overflow := s.Drain(nil)
		if overflow {
			t.Fatal("overflow")
		}
		for _, c := range changes {
			feed[Change{Hash: c.Hash, Medium: c.Medium}] = c.Added
		}
		all := map[uint64]bool{}
		for _, m := range media {
			blocks := s.Blocks(nil, m)
			if len(blocks) != s.LenIn(m) {
				t.Fatalf("LenIn(%s) = %d, Blocks has %d", m, s.LenIn(m), len(blocks))
			}
			n := 0
			for c, present := range feed {
				if present && c.Medium == engine.NormalizeMedium(m) {
					n++
				}
			}
			if n != len(blocks) {
				t.Fatalf("feed says %d blocks in %s, set has %d", n, m, len(blocks))
			}
			for _, h := range blocks {
				all[uint64(h)] = true
				if !s.ContainsIn(h, m) || !s.Contains(h) {
					t.Fatalf("block %x in Blocks(%s) but not contained", h, m)
				}
			}
		}
		if len(all) != s.Len() {
			t.Fatalf("Len = %d, union of media has %d", s.Len(), len(all))
		}
	})
}
