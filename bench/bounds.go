package bench

import (
	"container/heap"
	"math"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/lru"
)

// Prompt is one sent prompt as the engine sees it: its length and the chained
// hashes of its full blocks.
type Prompt struct {
	// At is the prompt's scheduled send time (for the oracle's queues).
	At time.Duration
	// Tokens is the prompt length in tokens.
	Tokens int
	// Hashes are the full blocks' chained hashes.
	Hashes []kvblock.Hash
	// Stored are the blocks the engine holds once the request is done: the
	// prompt's and those of the generated tokens (which a next turn that
	// resends the answer can hit). Nil means Hashes.
	Stored []kvblock.Hash
	// Warmup marks a warm-up request: it fills the caches but its hits and
	// tokens are not counted, as in the run's summary.
	Warmup bool
}

// stored returns the blocks a request leaves in the cache.
func (p *Prompt) stored() []kvblock.Hash {
	if p.Stored != nil {
		return p.Stored
	}
	return p.Hashes
}

// Bounds are hit-rate ceilings of one request sequence, token-weighted
// (Σ hit tokens / Σ prompt tokens), hits counted at arrival as whole leading
// blocks (docs/perf-model.md#hit-rate-bounds). Each request's blocks, generated ones
// included, enter the caches at its arrival.
type Bounds struct {
	// Replicas, CacheBlocks and BlockSize are the fleet shape assumed.
	Replicas    int `json:"replicas"`
	CacheBlocks int `json:"cache_blocks"`
	BlockSize   int `json:"block_size"`
	// HInf is the infinite single cache: a block hits iff any earlier
	// request had it. No routing and no memory size can beat it.
	HInf float64 `json:"h_inf"`
	// HPoolLRU is one LRU cache of Replicas·CacheBlocks blocks: a perfect
	// global cache with realistic eviction.
	HPoolLRU float64 `json:"h_pool_lru"`
	// HPoolBelady is the same pooled cache with clairvoyant farthest-next-use
	// eviction: the capacity-limited ceiling.
	HPoolBelady float64 `json:"h_pool_belady"`
	// HOracle is the hit rate of an offline replay: an exact-state router
	// over per-replica LRU caches that picks the lowest estimated TTFT (queue
	// wait + prefill of the uncached part, simulator defaults), seeing every
	// cache exactly. It is a reference, not a bound (it gives up hits to
	// avoid queues); the measured oracle is a run of kind KindOracle.
	HOracle float64 `json:"h_oracle"`
	// OracleTTFT is that oracle's estimated TTFT (prefill only, no decode
	// interference): a reference, not a bound.
	OracleTTFT Dist `json:"oracle_ttft"`
}

// ComputeBounds computes the bounds of prompts (in arrival order) for
// replicas caches of cacheBlocks blocks each. Warm-up prompts fill the caches
// but are left out of the rates.
func ComputeBounds(prompts []Prompt, replicas, cacheBlocks, blockSize int) Bounds {
	b := Bounds{Replicas: replicas, CacheBlocks: cacheBlocks, BlockSize: blockSize}
	total := 0
	for _, p := range prompts {
		if !p.Warmup {
			total += p.Tokens
		}
	}
	if total == 0 || replicas <= 0 || cacheBlocks <= 0 {
		return b
	}
	rate := func(hitBlocks int) float64 { return float64(hitBlocks*blockSize) / float64(total) }
	b.HInf = rate(infiniteHits(prompts))
	b.HPoolLRU = rate(lruHits(prompts, replicas*cacheBlocks))
	b.HPoolBelady = rate(beladyHits(prompts, replicas*cacheBlocks))
	hits, ttft := oracleHits(prompts, replicas, cacheBlocks, blockSize)
	b.HOracle = rate(hits)
	b.OracleTTFT = NewDist(ttft)
	return b
}

func infiniteHits(prompts []Prompt) int {
	seen := map[kvblock.Hash]struct{}{}
	hits := 0
	for _, p := range prompts {
		for _, h := range p.Hashes {
			if _, ok := seen[h]; !ok {
				break
			}
			if !p.Warmup {
				hits++
			}
		}
		for _, h := range p.stored() {
			seen[h] = struct{}{}
		}
	}
	return hits
}

// blockLRU is a block LRU of fixed capacity (an index-linked internal/lru.List:
// no allocation per touch), most recent first.
type blockLRU struct {
	cap    int
	blocks *lru.List[kvblock.Hash, struct{}]
}

func newLRU(capacity int) *blockLRU {
	return &blockLRU{cap: capacity, blocks: lru.New[kvblock.Hash, struct{}](0)}
}

// match returns the number of leading hashes present.
func (c *blockLRU) match(hs []kvblock.Hash) int {
	for i, h := range hs {
		if !c.blocks.Contains(h) {
			return i
		}
	}
	return len(hs)
}

// insert touches or adds hs in order, then evicts the least recent.
func (c *blockLRU) insert(hs []kvblock.Hash) {
	for _, h := range hs {
		c.blocks.Touch(h)
	}
	for c.blocks.Len() > c.cap {
		c.blocks.RemoveOldest()
	}
}

func lruHits(prompts []Prompt, capacity int) int {
	c := newLRU(capacity)
	hits := 0
	for _, p := range prompts {
		if m := c.match(p.Hashes); !p.Warmup {
			hits += m
		}
		c.insert(p.stored())
	}
	return hits
}

// nextUse is a max-heap entry: a resident block and its next use.
type nextUse struct {
	next int
	h    kvblock.Hash
}

type useHeap []nextUse

func (h useHeap) Len() int           { return len(h) }
func (h useHeap) Less(i, j int) bool { return h[i].next > h[j].next }
func (h useHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *useHeap) Push(x any)        { *h = append(*h, x.(nextUse)) }
func (h *useHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func beladyHits(prompts []Prompt, capacity int) int {
	const never = math.MaxInt
	next := make([][]int, len(prompts))
	upcoming := map[kvblock.Hash]int{}
	for i := len(prompts) - 1; i >= 0; i-- {
		hs := prompts[i].stored()
		next[i] = make([]int, len(hs))
		for j, h := range hs {
			if n, ok := upcoming[h]; ok {
				next[i][j] = n
			} else {
				next[i][j] = never
			}
		}
		for _, h := range prompts[i].Hashes {
			upcoming[h] = i
		}
	}
	resident := map[kvblock.Hash]int{} // block → its current next use
	var hp useHeap
	hits := 0
	for i, p := range prompts {
		for _, h := range p.Hashes {
			if _, ok := resident[h]; !ok {
				break
			}
			if !p.Warmup {
				hits++
			}
		}
		for j, h := range p.stored() {
			resident[h] = next[i][j]
			heap.Push(&hp, nextUse{next: next[i][j], h: h})
		}
		for len(resident) > capacity {
			e := heap.Pop(&hp).(nextUse)
			if n, ok := resident[e.h]; ok && n == e.next {
				delete(resident, e.h)
			}
		}
	}
	return hits
}

// Prefill model of the simulator's defaults (Llama-3.1-8B, one H100):
// T0 + max(W_floor, n/R_lin) + A_att·n·(c + n/2).
func prefillTime(newTokens, cached int) time.Duration {
	n := float64(max(1, newTokens))
	secs := 0.001 + math.Max(0.0063, n/47000) + 1.31e-9*n*(float64(cached)+n/2)
	return time.Duration(secs * float64(time.Second))
}

func oracleHits(prompts []Prompt, replicas, cacheBlocks, blockSize int) (int, []time.Duration) {
	caches := make([]*blockLRU, replicas)
	for i := range caches {
		caches[i] = newLRU(cacheBlocks)
	}
	freeAt := make([]time.Duration, replicas)
	ttft := make([]time.Duration, 0, len(prompts))
	hits := 0
	for _, p := range prompts {
		best, bestT, bestM := 0, time.Duration(math.MaxInt64), 0
		for i, c := range caches {
			m := c.match(p.Hashes)
			t := max(0, freeAt[i]-p.At) + prefillTime(p.Tokens-m*blockSize, m*blockSize)
			if t < bestT {
				best, bestT, bestM = i, t, m
			}
		}
		start := max(p.At, freeAt[best])
		freeAt[best] = start + prefillTime(p.Tokens-bestM*blockSize, bestM*blockSize)
		if !p.Warmup {
			ttft = append(ttft, freeAt[best]-p.At)
			hits += bestM
		}
		caches[best].insert(p.stored())
	}
	return hits, ttft
}
