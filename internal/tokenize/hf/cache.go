package hf

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/inferrail/inferrail/internal/lru"
)

// cacheShards is the number of independently locked parts of a cache.
const cacheShards = 16

// entryOverhead approximates the bytes an entry costs beyond its key and ids
// (map slot, list slot and links, slice and string headers).
const entryOverhead = 96

// idCache is a concurrency-safe LRU from strings to token ids, bounded by an
// approximate number of bytes. Values are shared: callers must not modify a
// slice returned by get.
type idCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
	hits   atomic.Uint64
	misses atomic.Uint64
}

type cacheShard struct {
	mu      sync.Mutex                  // protects the fields below
	entries *lru.List[string, []uint32] // most recent first
	bytes   int64
	limit   int64
}

// newIDCache returns a cache holding about limit bytes, or nil if limit <= 0.
func newIDCache(limit int64) *idCache {
	if limit <= 0 {
		return nil
	}
	c := &idCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		s := &c.shards[i]
		s.entries = lru.New[string, []uint32](0)
		s.limit = max(limit/cacheShards, 1)
	}
	return c
}

func entryCost(key string, ids []uint32) int64 {
	return int64(len(key)) + 4*int64(cap(ids)) + entryOverhead
}

func (c *idCache) shard(key string) *cacheShard {
	return &c.shards[maphash.String(c.seed, key)%cacheShards]
}

// get returns the ids cached for key.
func (c *idCache) get(key string) ([]uint32, bool) {
	if c == nil {
		return nil, false
	}
	s := c.shard(key)
	s.mu.Lock()
	ids, ok := s.entries.Get(key)
	s.mu.Unlock()
	if !ok {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return ids, true
}

// put stores a copy of ids under key, evicting the least recently used
// entries of its shard beyond the byte limit. An entry larger than a shard's
// limit is not stored.
func (c *idCache) put(key string, ids []uint32) {
	if c == nil {
		return
	}
	cost := entryCost(key, ids[:len(ids):len(ids)])
	s := c.shard(key)
	if cost > s.limit {
		return
	}
	cp := make([]uint32, len(ids))
	copy(cp, ids)
	// Own the key: it may be a slice of a much larger request body.
	k := string([]byte(key))
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.entries.Put(k, cp); ok {
		s.bytes -= entryCost(k, old)
	}
	s.bytes += cost
	for s.bytes > s.limit {
		key, ids, _ := s.entries.RemoveOldest()
		s.bytes -= entryCost(key, ids)
	}
}

// stats reports the counters and current size of the cache.
func (c *idCache) stats() (hits, misses uint64, entries int, bytes int64) {
	if c == nil {
		return 0, 0, 0, 0
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		entries += s.entries.Len()
		bytes += s.bytes
		s.mu.Unlock()
	}
	return c.hits.Load(), c.misses.Load(), entries, bytes
}
