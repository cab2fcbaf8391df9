package summary

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// Key is the 32-bit form of a block hash that summaries are built over: the
// two halves of the 64-bit hash folded together. Deltas carry keys, halving
// their size; the cost is a second source of false positives, a stranger's
// key equal to a held block's, at n/2^32 for n held blocks (5e-6 at 20,000),
// negligible beside the filter's own rate.
type Key uint32

// KeySize is the encoded size of a Key.
const KeySize = 4

// KeyOf returns the summary key of a block hash.
func KeyOf(h kvblock.Hash) Key { return Key(uint32(h) ^ uint32(h>>32)) }

// bytes is the key as fed to the bloom filter's hashing.
func (k Key) bytes() [KeySize]byte {
	var b [KeySize]byte
	binary.LittleEndian.PutUint32(b[:], uint32(k))
	return b
}

// newBloom returns a filter sized for capacity blocks at false-positive rate fp.
func newBloom(capacity uint, fp float64) *bloom.BloomFilter {
	return bloom.NewWithEstimates(capacity, fp)
}

// atomicFilter is the receiving side's copy of a bloom filter: the same bit
// layout as bloom.BloomFilter (positions come from bloom.Locations), stored so
// that readers and one writer can share it without locks. Bits are only ever
// set, so a reader sees each bit either before or after an update, never torn.
// Keys removed since the filter was built sit in gone, behind a read-mostly
// lock that readers take only when some key is gone.
type atomicFilter struct {
	m       uint64
	k       uint
	words   []uint64
	count   atomic.Uint64
	hasGone atomic.Bool
	mu      sync.RWMutex // protects gone
	gone    map[Key]struct{}
}

func newAtomicFilter(f Filter) *atomicFilter {
	a := &atomicFilter{m: f.M, k: uint(f.K), words: f.Words, gone: make(map[Key]struct{}, len(f.Gone))}
	for _, k := range f.Gone {
		a.gone[k] = struct{}{}
	}
	a.hasGone.Store(len(a.gone) > 0)
	a.count.Store(f.Count)
	return a
}

// add sets the bits of h and clears its removal. Only one writer may call
// add and remove at a time.
func (a *atomicFilter) add(key Key) {
	k := key.bytes()
	for _, loc := range bloom.Locations(k[:], a.k) {
		i := loc % a.m
		atomic.OrUint64(&a.words[i>>6], 1<<(i&63))
	}
	a.count.Add(1)
	if a.hasGone.Load() {
		a.mu.Lock()
		delete(a.gone, key)
		a.hasGone.Store(len(a.gone) > 0)
		a.mu.Unlock()
	}
}

// remove marks key as no longer held.
func (a *atomicFilter) remove(key Key) {
	a.mu.Lock()
	a.gone[key] = struct{}{}
	a.hasGone.Store(true)
	a.mu.Unlock()
	for {
		n := a.count.Load()
		if n == 0 || a.count.CompareAndSwap(n, n-1) {
			return
		}
	}
}

// bits reports whether every bit of a key's locations is set.
func (a *atomicFilter) bits(key Key) bool {
	k := key.bytes()
	for _, loc := range bloom.Locations(k[:], a.k) {
		i := loc % a.m
		if atomic.LoadUint64(&a.words[i>>6])&(1<<(i&63)) == 0 {
			return false
		}
	}
	return true
}

// test reports whether key may be held: its bits are set and it was not
// removed.
func (a *atomicFilter) test(key Key) bool {
	if !a.bits(key) {
		return false
	}
	return !a.isGone(key)
}

// isGone reports whether key was removed since the filter was built.
func (a *atomicFilter) isGone(key Key) bool {
	if !a.hasGone.Load() {
		return false
	}
	a.mu.RLock()
	_, ok := a.gone[key]
	a.mu.RUnlock()
	return ok
}
