package sidecar

import (
	"sync"
	"sync/atomic"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/lru"
)

// MediumGPU is the medium of the blocks in the approximate set and of engine
// blocks reported without one.
const MediumGPU = "GPU"

// blockSink receives the changes of a block set, for the summary builder.
// Calls must not block.
type blockSink interface {
	blocksAdded(hs []kvblock.Hash, medium string)
	blocksRemoved(hs []kvblock.Hash, medium string)
}

// approxSet is the approximate block set kept when the engine publishes no KV
// events: the full blocks of every prompt the engine accepted through the
// data path, evicted least recently used at the engine's capacity. It copies
// vLLM's order of eviction within a request: a finished request's blocks are
// freed last block first, so its first block stays longest.
type approxSet struct {
	mu       sync.Mutex // protects the fields below
	disabled bool       // set while the exact set is in use: prompts are ignored
	capacity int
	blocks   *lru.List[kvblock.Hash, struct{}] // most recently used first
	sink     blockSink
	onEvict  func(n int)
	added    []kvblock.Hash // scratch
	removed  []kvblock.Hash // scratch
	// held is blocks.Len(), stored after every change under mu, so that
	// Len (read for every response's load report) takes no lock.
	held atomic.Int64
}

// newApproxSet returns an empty set of the given capacity in blocks. sink and
// onEvict may be nil.
func newApproxSet(capacity int, sink blockSink, onEvict func(int)) *approxSet {
	return &approxSet{capacity: max(capacity, 1), blocks: lru.New[kvblock.Hash, struct{}](0), sink: sink, onEvict: onEvict}
}

// observePrompt records the block hashes of the prompts of one accepted
// request. It takes the lock once and does no I/O.
func (a *approxSet) observePrompt(prompts [][]kvblock.Hash) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.disabled {
		return
	}
	a.added, a.removed = a.added[:0], a.removed[:0]
	for _, hs := range prompts {
		// Touch last block first so the first block ends most recent.
		for i := len(hs) - 1; i >= 0; i-- {
			a.touchLocked(hs[i])
		}
	}
	a.evictLocked()
	a.flushLocked()
}

func (a *approxSet) touchLocked(h kvblock.Hash) {
	if a.blocks.Touch(h) {
		a.added = append(a.added, h)
	}
}

func (a *approxSet) evictLocked() {
	evicted := 0
	for a.blocks.Len() > a.capacity {
		h, _, _ := a.blocks.RemoveOldest()
		a.removed = append(a.removed, h)
		evicted++
	}
	if evicted > 0 && a.onEvict != nil {
		a.onEvict(evicted)
	}
}

// flushLocked stores the count (Len) and reports the changes collected in
// the scratch slices. A block added and evicted within one call is reported
// as both, in that order.
func (a *approxSet) flushLocked() {
	a.held.Store(int64(a.blocks.Len()))
	if a.sink == nil {
		return
	}
	if len(a.added) > 0 {
		a.sink.blocksAdded(a.added, MediumGPU)
	}
	if len(a.removed) > 0 {
		a.sink.blocksRemoved(a.removed, MediumGPU)
	}
}

// setCapacity resizes the set (the engine reported its capacity), evicting
// the least recently used blocks if it shrank.
func (a *approxSet) setCapacity(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.capacity = max(n, 1)
	a.added, a.removed = a.added[:0], a.removed[:0]
	a.evictLocked()
	a.flushLocked()
}

// Len returns the number of blocks held; it takes no lock.
func (a *approxSet) Len() int { return int(a.held.Load()) }

// Blocks returns the blocks held, most recently used first.
func (a *approxSet) Blocks() []kvblock.Hash {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.blocksLocked()
}

// blocksLocked returns a copy of the blocks held, most recently used first.
func (a *approxSet) blocksLocked() []kvblock.Hash {
	out := make([]kvblock.Hash, 0, a.blocks.Len())
	for h := range a.blocks.All() {
		out = append(out, h)
	}
	return out
}

// Contains reports whether h is held.
func (a *approxSet) Contains(h kvblock.Hash) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.blocks.Contains(h)
}

// withBlocks calls fn with the blocks held, under the set's lock, so no
// change is reported between the copy and the changes that follow.
func (a *approxSet) withBlocks(fn func([]kvblock.Hash)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fn(a.blocksLocked())
}

// disable drops every block and ignores prompts from now on (events took
// over).
func (a *approxSet) disable() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.disabled = true
	a.clearLocked()
}

// clear drops every block.
func (a *approxSet) clear() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clearLocked()
}

func (a *approxSet) clearLocked() {
	// A new list, not Clear: the old one's storage is not kept for a set
	// that may never fill again (disable).
	a.blocks = lru.New[kvblock.Hash, struct{}](0)
	a.held.Store(0)
}
