package bench

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// prompt builds a prompt of blocks named by ids (block size 1).
func prompt(at time.Duration, ids ...kvblock.Hash) Prompt {
	return Prompt{At: at, Tokens: len(ids), Hashes: ids}
}

func TestBoundsHandComputed(t *testing.T) {
	// Requests: [1 2 3] [1 2 4] [5 6] [1 2 3]. Infinite cache hits 0+2+0+3.
	// A pooled cache of 4 blocks (LRU): after r1 {1,2,3}; r2 hits 2, then
	// {1,2,3,4}; r3 misses, inserts 5,6 evicting 3,1 → {2,4,5,6}; r4 misses
	// (1 is gone). Belady keeps 1,2,3 (used again) and evicts among 4,5,6
	// (never used again), so r4 hits 3.
	ps := []Prompt{prompt(0, 1, 2, 3), prompt(1, 1, 2, 4), prompt(2, 5, 6), prompt(3, 1, 2, 3)}
	got := ComputeBounds(ps, 2, 2, 1)
	got.OracleTTFT = Dist{}
	want := Bounds{Replicas: 2, CacheBlocks: 2, BlockSize: 1, HInf: 5.0 / 11, HPoolLRU: 2.0 / 11, HPoolBelady: 5.0 / 11,
		HOracle: got.HOracle}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ComputeBounds mismatch (-want +got):\n%s", diff)
	}
}

// Properties on random prefix-chained sequences: every bound is at most
// H_inf; with room for every block, pooled caches reach H_inf; the oracle
// never beats the pooled Belady cache... (not provable with the prefix rule,
// so only ≤ H_inf is asserted for it).
func TestBoundsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 200 {
		var ps []Prompt
		distinct := map[kvblock.Hash]bool{}
		for i := range 40 {
			// A prefix from a small tree: first block one of 3, then one of
			// 4 children, then unique blocks.
			a := kvblock.Hash(rng.IntN(3) + 1)
			b := a*10 + kvblock.Hash(rng.IntN(4))
			hs := []kvblock.Hash{a, b}
			for j := range rng.IntN(5) {
				hs = append(hs, kvblock.Hash(1000*(iter*100+i+1)+j))
			}
			for _, h := range hs {
				distinct[h] = true
			}
			ps = append(ps, Prompt{At: time.Duration(i) * 10 * time.Millisecond, Tokens: len(hs)*4 + rng.IntN(4), Hashes: hs})
		}
		small := ComputeBounds(ps, 2, 1+rng.IntN(6), 4)
		for name, v := range map[string]float64{"lru": small.HPoolLRU, "belady": small.HPoolBelady, "oracle": small.HOracle} {
			if v > small.HInf+1e-12 || v < 0 {
				t.Fatalf("iter %d: %s = %v outside [0, H_inf=%v]", iter, name, v, small.HInf)
			}
		}
		big := ComputeBounds(ps, 1, len(distinct), 4)
		if big.HPoolLRU != big.HInf || big.HPoolBelady != big.HInf || big.HOracle != big.HInf {
			t.Fatalf("iter %d: with room for every block, bounds %+v must equal H_inf", iter, big)
		}
	}
}

// The oracle spreads a burst of unrelated prompts over idle replicas and
// sends a repeated prefix back to the replica that holds it.
func TestOracleRouting(t *testing.T) {
	ps := []Prompt{prompt(0, 1, 2, 3, 4), prompt(time.Second, 1, 2, 3, 4, 5)}
	for i := range ps {
		ps[i].Tokens *= 512
	}
	b := ComputeBounds(ps, 4, 100, 512)
	if want := 4.0 / 9; b.HOracle != want {
		t.Errorf("oracle hit rate %v, want %v", b.HOracle, want)
	}
}

// Blocks of generated tokens count: a next turn that resends the answer hits
// them, in every bound.
func TestBoundsStoredBlocks(t *testing.T) {
	p1 := prompt(0, 1, 2)
	p1.Stored = []kvblock.Hash{1, 2, 3}
	ps := []Prompt{p1, prompt(time.Second, 1, 2, 3, 4)}
	b := ComputeBounds(ps, 1, 10, 1)
	for name, v := range map[string]float64{"inf": b.HInf, "lru": b.HPoolLRU, "belady": b.HPoolBelady, "oracle": b.HOracle} {
		if v != 0.5 {
			t.Errorf("%s = %v, want 3 hit tokens of 6", name, v)
		}
	}
}

// The slice-threaded LRU behaves like a naive list LRU under random use.
func TestLRUMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 100 {
		capacity := 1 + rng.IntN(20)
		c := newLRU(capacity)
		var ref []kvblock.Hash // most recent last
		for step := range 200 {
			hs := make([]kvblock.Hash, rng.IntN(6))
			for i := range hs {
				hs[i] = kvblock.Hash(rng.IntN(30))
			}
			want := 0
			for _, h := range hs {
				found := false
				for _, r := range ref {
					found = found || r == h
				}
				if !found {
					break
				}
				want++
			}
			if got := c.match(hs); got != want {
				t.Fatalf("iter %d step %d: match %d, want %d", iter, step, got, want)
			}
			c.insert(hs)
			for _, h := range hs {
				for i, r := range ref {
					if r == h {
						ref = append(ref[:i], ref[i+1:]...)
						break
					}
				}
				ref = append(ref, h)
			}
			if len(ref) > capacity {
				ref = ref[len(ref)-capacity:]
			}
			if c.blocks.Len() != len(ref) {
				t.Fatalf("iter %d step %d: %d blocks held, want %d", iter, step, c.blocks.Len(), len(ref))
			}
		}
	}
}
