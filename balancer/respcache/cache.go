package respcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Cache is the balancer's response cache: the exact and the semantic
// cache over one store of responses. It is safe for concurrent use.
type Cache struct {
	cfg     Config
	log     *slog.Logger
	m       *metrics
	now     func() time.Time
	st      store
	mem     *memStore   // nil: Redis
	rs      *redisStore // nil: memory
	idx     *index      // nil: semantic off
	emb     *embedder   // nil: semantic off
	embTag  string      // the embedding model's tag, in every partition
	sampled map[string]bool

	synced   chan struct{} // closed after the first full load from Redis
	syncOnce sync.Once
}

// New builds the cache of a validated cfg. It does not connect to Redis
// or call the embeddings endpoint (Check and Run do).
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Cache, error) {
	if err := cfg.Validate("response_cache."); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{cfg: cfg, log: log, m: newMetrics(reg), now: time.Now, sampled: map[string]bool{}, synced: make(chan struct{})}
	for _, m := range cfg.SampledModels {
		c.sampled[m] = true
	}
	if cfg.Redis.Addr != "" {
		c.rs = &redisStore{c: newRedisClient(cfg.Redis), prefix: cfg.Redis.KeyPrefix, timeout: cfg.Redis.Timeout}
		c.st = c.rs
	} else {
		c.mem = newMemStore(cfg.MaxBytes, c.now, c.m)
		c.st = c.mem
	}
	if cfg.Semantic.Enabled {
		c.idx = newIndex(cfg.Semantic.Dimensions, cfg.Semantic.MaxEntries, c.m)
		c.emb = newEmbedder(cfg.Semantic.Embeddings, c.m)
		c.embTag = Tag(cfg.Semantic.Embeddings.Model)
	}
	return c, nil
}

// Close closes the Redis connections.
func (c *Cache) Close() error {
	if c.rs != nil {
		return c.rs.c.Close()
	}
	return nil
}

// firstEmbedding names the source of an index size learned from an answer.
func (c *Cache) firstEmbedding() string {
	return fmt.Sprintf("the first embedding of %s from %s", c.emb.model, c.emb.url)
}

// Check embeds one probe text within bound when the semantic cache is on:
// an embedding whose size is not semantic.dimensions is an error (the
// index's size is learned from it when none is configured). An endpoint
// that does not answer is no error: the size is checked at the first
// answer instead.
func (c *Cache) Check(ctx context.Context, bound time.Duration) error {
	if c.emb == nil {
		return nil
	}
	v, err := c.emb.embed(ctx, "inferrail response cache probe", bound)
	if err != nil {
		c.log.Warn("the embeddings endpoint did not answer the start-up probe; the vector size is checked at its first answer",
			"url", c.emb.url, "model", c.emb.model, "err", err)
		c.emb.downUntil.Store(0)
		return nil
	}
	if err := c.idx.check(len(v), c.firstEmbedding()); err != nil {
		return fmt.Errorf("response_cache.semantic: model %s at %s: %w", c.emb.model, c.emb.url, err)
	}
	return nil
}

// Query is one request as the balancer hands it to Lookup.
type Query struct {
	// Kind is KindChat or KindCompletions.
	Kind string
	// Scope is the tenant (the API key or its group; "" when keys are off).
	Scope string
	// Model is the canonical model name.
	Model string
	// Body is the request body (model already rewritten to Model).
	Body []byte
	// Header is the request's header (Cache-Control: no-cache skips the
	// lookup, no-store the lookup and the store).
	Header http.Header
}

// Lookup is what a lookup found; on a miss Store takes it back with the
// answer.
type Lookup struct {
	// Status is the Header value: hit, miss or bypass.
	Status string
	// Hit is the stored answer on a hit.
	Hit *Entry
	// Layer is which cache hit (exact or semantic).
	Layer string
	// Distance is the semantic hit's cosine distance.
	Distance float64

	rq    Request
	store bool      // the answer may be stored
	vec   []float32 // the question's unit embedding (nil: none)
}

// Storable reports whether the answer to a missed request may be stored.
func (l *Lookup) Storable() bool { return l.store }

// cacheControl returns the request's no-cache and no-store directives.
func cacheControl(h http.Header) (noCache, noStore bool) {
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			switch strings.ToLower(strings.TrimSpace(d)) {
			case "no-cache":
				noCache = true
			case "no-store":
				noStore = true
			}
		}
	}
	return noCache, noStore
}

// Lookup looks q up in the exact cache, then in the semantic cache; the
// embedding call is bounded by semantic.embeddings.timeout and every Redis
// call by redis.timeout, so a slow or down dependency is a miss, never a
// long wait.
func (c *Cache) Lookup(ctx context.Context, q Query) *Lookup {
	l := &Lookup{Status: StatusBypass}
	noCache, noStore := cacheControl(q.Header)
	if noStore {
		c.m.bypass.WithLabelValues("no_store").Inc()
		return l
	}
	rq, err := ParseRequest(q.Kind, q.Scope, q.Model, q.Body)
	if err != nil {
		c.m.bypass.WithLabelValues("unparsable").Inc()
		return l
	}
	if !rq.Deterministic && !c.sampled[q.Model] {
		c.m.bypass.WithLabelValues("sampled").Inc()
		return l
	}
	l.rq, l.store = rq, true
	if noCache {
		c.m.bypass.WithLabelValues("no_cache").Inc()
		return l
	}
	l.Status = StatusMiss
	key := storeKey(rq.Scope, rq.Model, rq.Key)
	if c.cfg.Exact.Enabled {
		if e := c.get(ctx, CacheExact, key, &rq); e != nil {
			c.m.hits.WithLabelValues(CacheExact).Inc()
			l.Status, l.Hit, l.Layer = StatusHit, e, CacheExact
			return l
		}
		c.m.misses.WithLabelValues(CacheExact).Inc()
	}
	if c.idx == nil || rq.Question == "" || len(rq.Question) > c.cfg.Semantic.Embeddings.MaxInputBytes {
		return l
	}
	v, err := c.emb.Embed(ctx, rq.Question)
	if err == nil {
		err = normalizeVector(v)
	}
	if err == nil {
		err = c.idx.check(len(v), c.firstEmbedding())
	}
	if err != nil {
		c.embedFailed(err)
		c.m.misses.WithLabelValues(CacheSemantic).Inc()
		return l
	}
	l.vec = v
	best, dist, ok := c.idx.Search(rq.Partition+":"+c.embTag, v, c.now())
	if ok {
		c.m.similarity.Observe(dist)
	}
	if ok && dist <= c.cfg.Semantic.MaxDistance {
		if e := c.get(ctx, CacheSemantic, best.ID, &rq); e != nil {
			c.m.hits.WithLabelValues(CacheSemantic).Inc()
			l.Status, l.Hit, l.Layer, l.Distance = StatusHit, e, CacheSemantic, dist
			return l
		}
	}
	c.m.misses.WithLabelValues(CacheSemantic).Inc()
	return l
}

// embedFailed counts and logs a failed embedding.
func (c *Cache) embedFailed(err error) {
	var de *DimensionError
	switch {
	case errors.As(err, &de):
		c.m.errors.WithLabelValues(CacheSemantic, "dimension").Inc()
		c.log.Error("semantic cache: embedding size mismatch; the semantic cache is bypassed", "err", err)
	case errors.Is(err, ErrEmbeddingsDown):
		c.m.errors.WithLabelValues(CacheSemantic, "embed").Inc()
	default:
		c.m.errors.WithLabelValues(CacheSemantic, "embed").Inc()
		c.log.Warn("semantic cache: embedding failed; the request goes on without it", "err", err)
	}
}

// get returns the entry under key when it belongs to rq's scope and
// model (a defence against a key collision or a foreign writer).
func (c *Cache) get(ctx context.Context, layer, key string, rq *Request) *Entry {
	e, err := c.st.Get(ctx, key)
	if err != nil {
		c.m.errors.WithLabelValues(layer, "get").Inc()
		c.log.Debug("response cache get failed", "err", err)
		return nil
	}
	if e == nil {
		if layer == CacheSemantic { // the answer left the store: so does its vector
			c.idx.Remove(key, "")
		}
		return nil
	}
	if e.Scope != rq.Scope || e.Model != rq.Model || e.Stream != rq.Stream {
		return nil
	}
	return e
}

// Store keeps e as the answer to the request l missed; l.Storable must
// hold. Failures are counted and logged, never returned: the client has
// its answer.
func (c *Cache) Store(ctx context.Context, l *Lookup, e *Entry) {
	if !l.store {
		return
	}
	ctx = context.WithoutCancel(ctx)
	rq := &l.rq
	key := storeKey(rq.Scope, rq.Model, rq.Key)
	e.Scope, e.Model, e.Created = rq.Scope, rq.Model, c.now()
	if err := c.st.Set(ctx, key, e, c.cfg.TTL); err != nil {
		c.m.errors.WithLabelValues(CacheExact, "set").Inc()
		c.log.Warn("response cache store failed", "err", err)
		return
	}
	c.m.stores.WithLabelValues(CacheExact).Inc()
	if l.vec == nil {
		return
	}
	v := &Vector{ID: key, Partition: rq.Partition + ":" + c.embTag, Model: rq.Model, Scope: rq.Scope,
		Expires: e.Created.Add(c.cfg.TTL), V: l.vec}
	if err := c.idx.Add(v, c.firstEmbedding()); err != nil {
		c.embedFailed(err)
		return
	}
	if c.rs != nil {
		if err := c.rs.SetVector(ctx, key, v, c.cfg.TTL); err != nil {
			c.m.errors.WithLabelValues(CacheSemantic, "set").Inc()
			c.log.Warn("semantic cache store failed", "err", err)
			return
		}
	}
	c.m.stores.WithLabelValues(CacheSemantic).Inc()
}

// PurgeResult says what a purge removed.
type PurgeResult struct {
	Filter
	// Entries counts the stored responses removed (in shared mode, from
	// Redis); Vectors the vectors removed from this balancer's index.
	Entries int `json:"entries"`
	Vectors int `json:"vectors"`
}

// Purge removes the responses and vectors f selects; in shared mode from
// Redis, and every balancer's index follows.
func (c *Cache) Purge(ctx context.Context, f Filter) (PurgeResult, error) {
	res := PurgeResult{Filter: f}
	n, err := c.st.Purge(ctx, f)
	res.Entries = n
	if c.idx != nil {
		st, mt := "", ""
		if f.Scope != "" {
			st = Tag(f.Scope)
		}
		if f.Model != "" {
			mt = Tag(f.Model)
		}
		res.Vectors = c.idx.PurgeTags(st, mt)
	}
	if err != nil {
		c.m.errors.WithLabelValues(CacheExact, "purge").Inc()
		return res, fmt.Errorf("purge: %w", err)
	}
	return res, nil
}
