package enginesim

import (
	"github.com/inferrail/inferrail/internal/kvblock"
)

// blockPool is vLLM's BlockPool: a fixed array of KV blocks, a free queue in
// LRU order (evict from the front, freed blocks appended at the back) and a
// map from block hash to the cached blocks holding it. Block 0 is the null
// block and never used. A cached block stays in the map while it is free,
// so a later prefix hit can take it back; it leaves the map only when the
// free queue hands it out again (eviction). Several physical blocks may hold
// the same hash when two requests computed the same prefix concurrently.
//
// The free queue is its own list, not internal/lru: it links physical blocks
// (the fixed array), not keys, several blocks may hold one hash, a block
// taken back on a prefix hit leaves the middle of the queue, and the order
// in which vLLM's FreeKVCacheBlockQueue appends a request's freed blocks
// (last block first) decides which ties are evicted first. An LRU keyed by
// hash would model none of that.
//
// Not safe for concurrent use; the engine holds its lock.
type blockPool struct {
	blocks     []kvBlock
	head, tail int32 // free queue ends, -1 when empty
	nfree      int
	cached     map[kvblock.Hash]int32 // first block holding a hash; others chained by dupNext
	key        uint64                 // engine-hash key (per process, new on restart)
	sink       func(kvEvent)          // receives every event as it happens
}

// kvBlock is one physical block.
type kvBlock struct {
	ref        int32
	prev, next int32 // free queue links
	dupNext    int32 // next block with the same hash, -1
	inFree     bool
	isCached   bool
	hash       kvblock.Hash
}

// kvEvent is one prefix-cache event, kept until the step that caused it ends.
type kvEvent struct {
	kind      eventKind
	hashes    []uint64 // engine hashes (stored), or the one removed hash
	parent    uint64
	hasParent bool
	tokens    []uint32
	lora      string
}

type eventKind uint8

const (
	evStored eventKind = iota + 1
	evRemoved
	evCleared
)

const nullBlock = 0

// newBlockPool returns a pool of n blocks (block 0 reserved) whose free queue
// holds blocks 1..n-1 in order.
func newBlockPool(n int, key uint64, sink func(kvEvent)) *blockPool {
	p := &blockPool{
		blocks: make([]kvBlock, n),
		cached: make(map[kvblock.Hash]int32),
		key:    key,
		sink:   sink,
		head:   -1,
		tail:   -1,
	}
	for i := range p.blocks {
		p.blocks[i] = kvBlock{prev: -1, next: -1, dupNext: -1}
	}
	for i := 1; i < n; i++ {
		p.pushBack(int32(i))
	}
	return p
}

// usable returns the number of blocks requests can use.
func (p *blockPool) usable() int { return len(p.blocks) - 1 }

// numFree returns the free queue's length (cached-but-free blocks included).
func (p *blockPool) numFree() int { return p.nfree }

// usage returns vLLM's kv_cache_usage_perc: 1 - free/(num_gpu_blocks-1).
func (p *blockPool) usage() float64 {
	if p.usable() == 0 {
		return 0
	}
	return 1 - float64(p.nfree)/float64(p.usable())
}

// engineHash maps a router hash to the hash the engine publishes: a keyed
// bijective 64-bit mix, so values differ per process and restart but never
// collide where router hashes do not.
func (p *blockPool) engineHash(h kvblock.Hash) uint64 {
	x := uint64(h) ^ p.key
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// lookup returns a cached block holding h.
func (p *blockPool) lookup(h kvblock.Hash) (int32, bool) {
	id, ok := p.cached[h]
	return id, ok
}

func (p *blockPool) pushBack(id int32) {
	b := &p.blocks[id]
	b.prev, b.next, b.inFree = p.tail, -1, true
	if p.tail >= 0 {
		p.blocks[p.tail].next = id
	} else {
		p.head = id
	}
	p.tail = id
	p.nfree++
}

func (p *blockPool) remove(id int32) {
	b := &p.blocks[id]
	if b.prev >= 0 {
		p.blocks[b.prev].next = b.next
	} else {
		p.head = b.next
	}
	if b.next >= 0 {
		p.blocks[b.next].prev = b.prev
	} else {
		p.tail = b.prev
	}
	b.prev, b.next, b.inFree = -1, -1, false
	p.nfree--
}

// touch takes a reference on each block (prefix hits), taking free ones out
// of the free queue.
func (p *blockPool) touch(ids []int32) {
	for _, id := range ids {
		b := &p.blocks[id]
		if b.ref == 0 && b.inFree {
			p.remove(id)
		}
		b.ref++
	}
}

// evictable counts the blocks of ids that sit in the free queue (they
// stop being allocatable once touched).
func (p *blockPool) evictable(ids []int32) int {
	n := 0
	for _, id := range ids {
		if p.blocks[id].ref == 0 && p.blocks[id].inFree {
			n++
		}
	}
	return n
}

// allocate appends n new blocks to dst, popped from the front of the free
// queue; a popped block that was cached is evicted (one BlockRemoved).
// The caller has checked that n blocks are free.
func (p *blockPool) allocate(dst []int32, n int) []int32 {
	for range n {
		id := p.head
		p.remove(id)
		p.evict(id)
		p.blocks[id].ref = 1
		dst = append(dst, id)
	}
	return dst
}

// evict drops a block's hash from the cache, reporting BlockRemoved.
func (p *blockPool) evict(id int32) {
	b := &p.blocks[id]
	if !b.isCached {
		return
	}
	h := b.hash
	// Unlink id from the chain of blocks holding h.
	if first := p.cached[h]; first == id {
		if b.dupNext >= 0 {
			p.cached[h] = b.dupNext
		} else {
			delete(p.cached, h)
		}
	} else {
		for cur := first; cur >= 0; cur = p.blocks[cur].dupNext {
			if p.blocks[cur].dupNext == id {
				p.blocks[cur].dupNext = b.dupNext
				break
			}
		}
	}
	b.isCached, b.hash, b.dupNext = false, 0, -1
	p.sink(kvEvent{kind: evRemoved, hashes: []uint64{p.engineHash(h)}})
}

// cache registers full blocks ids with their router hashes and reports them
// in one BlockStored. parent is the hash of the block before ids[0], if any;
// tokens are exactly the blocks' tokens.
func (p *blockPool) cache(ids []int32, hashes []kvblock.Hash, parent *kvblock.Hash, tokens []uint32, lora string) {
	ev := kvEvent{kind: evStored, hashes: make([]uint64, len(ids)), tokens: tokens, lora: lora}
	if parent != nil {
		ev.parent, ev.hasParent = p.engineHash(*parent), true
	}
	for i, id := range ids {
		h := hashes[i]
		b := &p.blocks[id]
		b.isCached, b.hash, b.dupNext = true, h, -1
		if first, ok := p.cached[h]; ok {
			last := first
			for p.blocks[last].dupNext >= 0 {
				last = p.blocks[last].dupNext
			}
			p.blocks[last].dupNext = id
		} else {
			p.cached[h] = id
		}
		ev.hashes[i] = p.engineHash(h)
	}
	p.sink(ev)
}

// free drops one reference from each block, in the given order, and appends
// the blocks that became unused to the free queue in that order.
func (p *blockPool) free(ids []int32) {
	for _, id := range ids {
		p.blocks[id].ref--
	}
	for _, id := range ids {
		if b := &p.blocks[id]; b.ref == 0 && !b.inFree && id != nullBlock {
			p.pushBack(id)
		}
	}
}

// reset empties the cache if no block is in use and reports whether it did
// (vLLM's reset_prefix_cache); the free queue keeps its order.
func (p *blockPool) reset() bool {
	if p.nfree != p.usable() {
		return false
	}
	clear(p.cached)
	for i := range p.blocks {
		b := &p.blocks[i]
		b.isCached, b.hash, b.dupNext = false, 0, -1
	}
	p.sink(kvEvent{kind: evCleared})
	return true
}
