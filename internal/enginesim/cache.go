package enginesim

import (
	"cmp"
	"slices"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// CachedBlock is one block of the engine's prefix cache.
type CachedBlock struct {
	// Hash is the router hash (kvblock) of the block.
	Hash kvblock.Hash
	// EngineHash is what the engine publishes in KV events for the block.
	EngineHash uint64
	// Medium is the tier holding it; always "GPU".
	Medium string
}

// CachedBlocks returns the prefix cache's current blocks, one per distinct
// hash, sorted by Hash. Blocks in use and free-but-cached blocks are both
// included: both can serve a prefix hit.
func (e *Engine) CachedBlocks() []CachedBlock {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]CachedBlock, 0, len(e.pool.cached))
	for h := range e.pool.cached {
		out = append(out, CachedBlock{Hash: h, EngineHash: e.pool.engineHash(h), Medium: "GPU"})
	}
	slices.SortFunc(out, func(a, b CachedBlock) int { return cmp.Compare(a.Hash, b.Hash) })
	return out
}

// ResetPrefixCache empties the prefix cache and reports whether it did. Like
// vLLM it succeeds only when no block is in use (no sequence holds KV); on
// success it emits AllBlocksCleared (at once when the engine is idle,
// otherwise with the step in flight).
func (e *Engine) ResetPrefixCache() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.pool.reset() {
		return false
	}
	if !e.inflight {
		e.flushEvents(time.Now())
	}
	return true
}

// Restart simulates an engine process restart (a fault): every sequence ends
// with "abort", the cache empties without events (a new process starts with
// nothing) and engine hashes change (a new per-process key). A step in
// flight is discarded.
func (e *Engine) Restart() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropAll()
	e.epoch++
	clear(e.events)
	e.events = e.events[:0]
	e.pool = newBlockPool(e.cfg.NumGPUBlocks, randomKey(), e.recordEvent)
	e.m.state(0, 0, 0)
	e.log.Info("engine restarted")
}

// Load is a snapshot of an engine's occupancy.
type Load struct {
	// Running is the number of sequences in the running batch.
	Running int
	// Waiting is the number of sequences in the waiting queue (vLLM's
	// num_requests_waiting).
	Waiting int
	// Pending is the number of submitted sequences still inside
	// RequestOverhead (not yet visible to the scheduler).
	Pending int
	// KVUsage is vLLM's kv_cache_usage_perc (cached-but-free blocks count as free).
	KVUsage float64
	// FreeBlocks is the free queue's length; TotalBlocks the usable blocks;
	// CachedBlocks the distinct hashes in the prefix cache.
	FreeBlocks, TotalBlocks, CachedBlocks int
	// BeforeFirstToken is the number of sequences (pending, waiting or
	// running) that have not produced their first token yet: the requests
	// whose prefill is queued or under way. BeforeFirstTokenPromptTokens is
	// the sum of their prompt lengths. Together with Decoding they are the
	// scheduler state a router's load accounting is checked against.
	BeforeFirstToken, BeforeFirstTokenPromptTokens int
	// Decoding is the number of running sequences past their first token.
	Decoding int
}

// Load returns the engine's current occupancy.
func (e *Engine) Load() Load {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := Load{
		Running:      len(e.running),
		Waiting:      len(e.waiting),
		Pending:      len(e.pending),
		KVUsage:      e.pool.usage(),
		FreeBlocks:   e.pool.numFree(),
		TotalBlocks:  e.pool.usable(),
		CachedBlocks: len(e.pool.cached),
	}
	for _, q := range [][]*seq{e.pending, e.waiting, e.running} {
		for _, s := range q {
			if s.firstToken.IsZero() {
				l.BeforeFirstToken++
				l.BeforeFirstTokenPromptTokens += s.promptLen
			} else if s.state == seqRunning {
				l.Decoding++
			}
		}
	}
	return l
}
