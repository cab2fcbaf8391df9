package summary

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// key is the byte form of a block hash fed to the bloom filter's hashing.
func key(h kvblock.Hash) [8]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(h))
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
type atomicFilter struct {
	m     uint64
	k     uint
	words []uint64
	count atomic.Uint64
}

func newAtomicFilter(f Filter) *atomicFilter {
	a := &atomicFilter{m: f.M, k: uint(f.K), words: f.Words}
	a.count.Store(f.Count)
	return a
}

// add sets the bits of h. Only one writer may call add at a time.
func (a *atomicFilter) add(h kvblock.Hash) {
	k := key(h)
	for _, loc := range bloom.Locations(k[:], a.k) {
		i := loc % a.m
		atomic.OrUint64(&a.words[i>>6], 1<<(i&63))
	}
	a.count.Add(1)
}

// test reports whether h may be in the filter.
func (a *atomicFilter) test(h kvblock.Hash) bool {
	k := key(h)
	for _, loc := range bloom.Locations(k[:], a.k) {
		i := loc % a.m
		if atomic.LoadUint64(&a.words[i>>6])&(1<<(i&63)) == 0 {
			return false
		}
	}
	return true
}
