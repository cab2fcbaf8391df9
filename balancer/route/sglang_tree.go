package route

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// sglangTree is sglang_cache_aware's approximate prefix tree: which replica
// this balancer sent which prompt prefix, the way SGLang's router records
// each request it routes (docs/baselines.md). SGLang keys a radix tree on the
// request's text (or token ids); we key on the request's chained block hashes.
// Because h[i] names the whole prefix 0..i, a map from block hash to the
// replicas ("tenants") that were sent that prefix is the radix tree: walking
// the prompt's hashes and stopping at the first block nobody holds is the
// tree descent, and the last block reached is the deepest matched node.
//
// Synchronisation is lock-light: the map is split into treeShards shards by
// hash, each with its own mutex held for one block's lookup or update, so
// concurrent decisions rarely meet; the per-tenant counts are behind one
// read-write mutex, written once per decision and read (shared) per
// candidate by the least-loaded and smallest-tree choices. Memory is bounded: at most
// sglangTenantsPerBlock tenants per block (a ninth replica sent the same
// prefix replaces the least recently sent), and the tree is cut back to
// max_tree_size tokens every eviction_interval, or at once when it grows past
// twice that, by dropping the least recently sent (block, tenant) pairs. A
// child block is never touched without its parent, so dropping every pair
// last sent at or before a cut-off removes whole subtrees, leaves first, as
// SGLang's LRU leaf eviction does. A block costs about 170 bytes with the
// map's overhead (the key, a 136-byte node with room for eight tenants, the
// table's slack), however many tenants it has; at the default bound of 2^26
// tokens (4.2M blocks of 16) held by one tenant each that is about 0.7 GB, so
// a deployment lowers baselines.sglang.max_tree_size.
type sglangTree struct {
	shards [treeShards]treeShard

	mu      sync.RWMutex // protects tenants and their counts
	tenants map[uint64]*treeTenant

	total     atomic.Int64 // tokens held over every tenant
	lastSweep atomic.Int64 // unix ns of the last sweep (0: none yet)
	sweeping  atomic.Bool
}

const (
	treeShards            = 64
	sglangTenantsPerBlock = 8
)

type treeShard struct {
	mu sync.Mutex // protects m
	m  map[kvblock.Hash]treeNode
	_  [40]byte // keep shards on separate cache lines
}

// treeNode is one block of the tree: the tenants sent the prefix ending at
// it, and when each was last sent it.
type treeNode struct {
	tokens int32 // tokens in the block
	n      int32 // tenants in use
	ids    [sglangTenantsPerBlock]uint64
	last   [sglangTenantsPerBlock]int64 // unix ns
}

// treeTenant is what the tree knows of one replica.
type treeTenant struct {
	tokens    int64 // tokens of the blocks it holds in the tree
	processed int64 // requests sent to it (SGLang's min-load tie-break)
}

// treeMatch is the deepest matched node of a prompt.
type treeMatch struct {
	blocks int // matched blocks
	n      int // tenants at the deepest node
	ids    [sglangTenantsPerBlock]uint64
	last   [sglangTenantsPerBlock]int64
}

func newSGLangTree() *sglangTree {
	t := &sglangTree{tenants: map[uint64]*treeTenant{}}
	for i := range t.shards {
		t.shards[i].m = map[kvblock.Hash]treeNode{}
	}
	return t
}

func (t *sglangTree) shard(h kvblock.Hash) *treeShard {
	return &t.shards[mix64(uint64(h))%treeShards]
}

// match walks hashes from the root and returns the deepest block some tenant
// holds, with its tenants.
func (t *sglangTree) match(hashes []kvblock.Hash) treeMatch {
	var m treeMatch
	for i, h := range hashes {
		sh := t.shard(h)
		sh.mu.Lock()
		nd, ok := sh.m[h]
		sh.mu.Unlock()
		if !ok || nd.n == 0 {
			break
		}
		m.blocks, m.n, m.ids, m.last = i+1, int(nd.n), nd.ids, nd.last
	}
	return m
}

// held returns how many leading blocks of hashes tenant id holds.
func (t *sglangTree) held(hashes []kvblock.Hash, id uint64) int {
	for i, h := range hashes {
		sh := t.shard(h)
		sh.mu.Lock()
		nd := sh.m[h]
		sh.mu.Unlock()
		if !slices.Contains(nd.ids[:nd.n], id) {
			return i
		}
	}
	return len(hashes)
}

// insert records that hashes were sent to tenant id at now, with tokens
// tokens per block, and returns how many leading blocks it already held.
func (t *sglangTree) insert(hashes []kvblock.Hash, id uint64, tokens int, now time.Time) (had int) {
	ns := now.UnixNano()
	gained, leading := int64(0), true
	var lost displaced
	for _, h := range hashes {
		sh := t.shard(h)
		sh.mu.Lock()
		node := sh.m[h]
		if node.n == 0 {
			node.tokens = int32(tokens)
		}
		j := slices.Index(node.ids[:node.n], id)
		switch {
		case j >= 0:
			node.last[j] = ns
		case node.n < sglangTenantsPerBlock:
			node.ids[node.n], node.last[node.n] = id, ns
			node.n++
			gained += int64(node.tokens)
		default: // full: the least recently sent tenant makes room
			old := int32(0)
			for k := range node.n {
				if node.last[k] < node.last[old] {
					old = k
				}
			}
			lost.add(node.ids[old], int64(node.tokens))
			node.ids[old], node.last[old] = id, ns
			gained += int64(node.tokens)
		}
		sh.m[h] = node
		sh.mu.Unlock()
		if j >= 0 && leading {
			had++
		} else {
			leading = false
		}
	}
	t.mu.Lock()
	tn := t.tenant(id)
	tn.tokens += gained
	tn.processed++
	for k := range lost.n {
		t.tenant(lost.ids[k]).tokens -= lost.tokens[k]
		gained -= lost.tokens[k]
	}
	for d, n := range lost.more {
		t.tenant(d).tokens -= n
		gained -= n
	}
	t.mu.Unlock()
	t.total.Add(gained)
	return had
}

// displaced sums the tokens each displaced tenant lost in one insert: a
// fixed array for the usual few, a map (allocated) beyond.
type displaced struct {
	n      int
	ids    [sglangTenantsPerBlock]uint64
	tokens [sglangTenantsPerBlock]int64
	more   map[uint64]int64
}

func (d *displaced) add(id uint64, tokens int64) {
	if k := slices.Index(d.ids[:d.n], id); k >= 0 {
		d.tokens[k] += tokens
		return
	}
	if d.n < len(d.ids) {
		d.ids[d.n], d.tokens[d.n] = id, tokens
		d.n++
		return
	}
	if d.more == nil {
		d.more = map[uint64]int64{}
	}
	d.more[id] += tokens
}

// tenant returns id's entry; t.mu must be held.
func (t *sglangTree) tenant(id uint64) *treeTenant {
	tn := t.tenants[id]
	if tn == nil {
		tn = &treeTenant{}
		t.tenants[id] = tn
	}
	return tn
}

// stats returns the tokens tenant id holds and the requests sent to it.
func (t *sglangTree) stats(id uint64) (tokens, processed int64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if tn := t.tenants[id]; tn != nil {
		return tn.tokens, tn.processed
	}
	return 0, 0
}

// maybeSweep cuts the tree back to maxTokens when interval has passed since
// the last sweep, or at once when it holds more than twice maxTokens. One
// caller sweeps at a time; the others go on.
func (t *sglangTree) maybeSweep(now time.Time, interval time.Duration, maxTokens int64) {
	ns := now.UnixNano()
	last := t.lastSweep.Load()
	if last == 0 { // the interval starts at the first decision
		t.lastSweep.CompareAndSwap(0, ns)
		last = ns
	}
	due := ns-last >= int64(interval) || t.total.Load() > 2*maxTokens
	if !due || !t.sweeping.CompareAndSwap(false, true) {
		return
	}
	defer t.sweeping.Store(false)
	t.lastSweep.Store(ns)
	t.sweep(maxTokens)
}

// sweep drops the least recently sent (block, tenant) pairs until at most
// maxTokens remain (about: pairs sent at the cut-off instant all go). It
// collects and sorts every pair's time (16 bytes each), once per interval on
// the deciding goroutine, then drops pairs shard by shard, one lock at a time.
func (t *sglangTree) sweep(maxTokens int64) {
	excess := t.total.Load() - maxTokens
	if excess <= 0 {
		return
	}
	type pair struct {
		last   int64
		tokens int64
	}
	var pairs []pair
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for _, nd := range sh.m {
			for k := range nd.n {
				pairs = append(pairs, pair{nd.last[k], int64(nd.tokens)})
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		switch {
		case a.last < b.last:
			return -1
		case a.last > b.last:
			return 1
		}
		return 0
	})
	var cut int64
	for _, p := range pairs {
		cut = p.last
		if excess -= p.tokens; excess <= 0 {
			break
		}
	}
	freed := map[uint64]int64{}
	var total int64
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for h, nd := range sh.m {
			kept := int32(0)
			for k := range nd.n {
				if nd.last[k] <= cut {
					freed[nd.ids[k]] += int64(nd.tokens)
					total += int64(nd.tokens)
					continue
				}
				nd.ids[kept], nd.last[kept] = nd.ids[k], nd.last[k]
				kept++
			}
			if kept == 0 {
				delete(sh.m, h)
			} else if kept != nd.n {
				nd.n = kept
				sh.m[h] = nd
			}
		}
		sh.mu.Unlock()
	}
	// A pair an insert has placed but not yet counted (its tenant entry may
	// not exist yet) is taken off all the same: the insert adds it after,
	// so the two deltas meet. Dropping it left the tenant over-counted.
	t.mu.Lock()
	for id, n := range freed {
		t.tenant(id).tokens -= n
	}
	t.mu.Unlock()
	t.total.Add(-total)
}
