package tokenize

import (
	"container/list"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// entryOverhead approximates the bytes a cache entry costs beyond its key
// and ids (list element, map slot, slice headers).
const entryOverhead = 128

// pieceCache is a byte-bounded LRU cache from a prompt piece to its ids.
// It is safe for concurrent use.
type pieceCache struct {
	limit int64
	met   *cacheMetrics

	mu    sync.Mutex // protects the fields below
	bytes int64
	ll    *list.List // front: most recently used
	items map[string]*list.Element
}

type cacheEntry struct {
	key  string
	ids  []uint32
	cost int64
}

func newPieceCache(limit int64, met *cacheMetrics) *pieceCache {
	return &pieceCache{limit: limit, met: met, ll: list.New(), items: map[string]*list.Element{}}
}

func entryCost(key string, ids []uint32) int64 {
	return int64(len(key)) + 4*int64(len(ids)) + entryOverhead
}

// get returns the ids of key. The caller must not modify them.
func (c *pieceCache) get(key string) ([]uint32, bool) {
	c.mu.Lock()
	e, ok := c.items[key]
	if ok {
		c.ll.MoveToFront(e)
	}
	c.mu.Unlock()
	if !ok {
		c.met.misses.Inc()
		return nil, false
	}
	c.met.hits.Inc()
	return e.Value.(*cacheEntry).ids, true
}

// add stores a copy of ids under key, evicting the least recently used
// entries to stay within the byte limit. An entry larger than the limit is
// not stored.
func (c *pieceCache) add(key string, ids []uint32) {
	cost := entryCost(key, ids)
	if cost > c.limit {
		return
	}
	ent := &cacheEntry{key: key, ids: slices.Clone(ids), cost: cost}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		return
	}
	c.items[key] = c.ll.PushFront(ent)
	c.bytes += cost
	for c.bytes > c.limit {
		last := c.ll.Back()
		old := last.Value.(*cacheEntry)
		c.ll.Remove(last)
		delete(c.items, old.key)
		c.bytes -= old.cost
		c.met.evictions.Inc()
	}
	c.met.bytes.Set(float64(c.bytes))
	c.met.entries.Set(float64(len(c.items)))
}

// size returns the bytes and entries held.
func (c *pieceCache) size() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, len(c.items)
}

// cacheMetrics are the piece cache's metrics.
type cacheMetrics struct {
	hits, misses, evictions prometheus.Counter
	bytes, entries          prometheus.Gauge
}

func newCacheMetrics(reg prometheus.Registerer, model string) *cacheMetrics {
	labels := prometheus.Labels{"model": model}
	m := &cacheMetrics{
		hits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_tokenize_cache_hits_total", Help: "Prompt pieces found in the tokenize cache.", ConstLabels: labels}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_tokenize_cache_misses_total", Help: "Prompt pieces tokenized because they were not cached.", ConstLabels: labels}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_tokenize_cache_evictions_total", Help: "Prompt pieces evicted from the tokenize cache.", ConstLabels: labels}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inferrail_tokenize_cache_bytes", Help: "Approximate bytes held by the tokenize cache.", ConstLabels: labels}),
		entries: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inferrail_tokenize_cache_entries", Help: "Prompt pieces held by the tokenize cache.", ConstLabels: labels}),
	}
	if reg != nil {
		reg.MustRegister(m.hits, m.misses, m.evictions, m.bytes, m.entries)
	}
	return m
}
