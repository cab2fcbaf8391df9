package balancer

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/balancer/gateway"
	"github.com/inferrail/inferrail/balancer/respcache"
	"github.com/inferrail/inferrail/internal/openai"
)

// The response cache on the request path (docs/gateway.md#response-caches):
// forward hands an admitted request to serveCached, which answers it from
// the cache or runs the attempts and stores a clean answer.

// outcomeCacheHit is the outcome of a request answered from the cache.
const outcomeCacheHit = "cache_hit"

// probeBound bounds the start-up embedding probe (longer than a request's
// bound: a cold endpoint may take a moment; a dead one only delays start).
const probeBound = 3 * time.Second

// newResponseCache builds the response cache of cfg (nil when both caches
// are off) and probes the embeddings endpoint once: a vector size that is
// not response_cache.semantic.dimensions stops the start with that error.
func newResponseCache(cfg respcache.Config, log *slog.Logger, reg prometheus.Registerer) (*respcache.Cache, error) {
	if !cfg.On() {
		return nil, nil
	}
	c, err := respcache.New(cfg, log.With("component", "respcache"), reg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(probeBound, cfg.Semantic.Embeddings.Timeout))
	defer cancel()
	if err := c.Check(ctx, max(probeBound, cfg.Semantic.Embeddings.Timeout)); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// cacheScope is the tenant an identity's answers are kept under: its key's
// cache scope ("" with keys off: one open tenant).
func cacheScope(id gateway.Identity) string {
	if id.Key == nil {
		return ""
	}
	return id.Key.CacheScope
}

// serveCached answers rq from the response cache on a hit; otherwise it
// runs the attempts, capturing the response, and stores it when it ended
// cleanly. Every chat and completions response says what the cache did in
// X-Inferrail-Cache.
func (b *Balancer) serveCached(w http.ResponseWriter, r *http.Request, rq *request, sc *scratch) {
	c := b.cache
	if c == nil || rq.kind == kindEmbeddings {
		b.attempts(w, r, rq, sc)
		return
	}
	kind := respcache.KindChat
	if rq.kind == kindCompletions {
		kind = respcache.KindCompletions
	}
	id, _ := identityOf(r)
	l := c.Lookup(r.Context(), respcache.Query{Kind: kind, Scope: cacheScope(id), Model: rq.model.cfg.Name, Body: rq.body, Header: r.Header})
	w.Header().Set(respcache.Header, l.Status)
	if l.Hit != nil {
		rq.outcome = outcomeCacheHit
		respcache.Replay(w, l.Hit)
		return
	}
	if !l.Storable() {
		b.attempts(w, r, rq, sc)
		return
	}
	cw := respcache.NewCapture(w, b.cfg.ResponseCache.MaxEntryBytes)
	b.attempts(cw, r, rq, sc) // a stream broken after its first byte panics past the store
	if rq.outcome != outcomeOK || r.Context().Err() != nil {
		return
	}
	if e, ok := cw.Entry(); ok {
		c.Store(r.Context(), l, e)
	}
}

// servePurge removes cached responses (POST /admin/cache/purge): by model
// (?model=, aliases resolved), by tenant (?key= an API key's name, or
// ?group= a cache_group), both, or neither (everything). With keys on it
// needs the admin token. It answers the PurgeResult.
func (b *Balancer) servePurge(w http.ResponseWriter, r *http.Request) {
	if !b.adminAllowed(w, r) {
		return
	}
	if b.cache == nil {
		openai.BadRequest("", "the response cache is off (response_cache.exact.enabled and response_cache.semantic.enabled are false)").Write(w)
		return
	}
	q := r.URL.Query()
	var f respcache.Filter
	if m := q.Get("model"); m != "" {
		f.Model = m
		if mm := b.cur().models.lookup(m, b.fleet.Snapshot()); mm != nil {
			f.Model = mm.cfg.Name
		}
	}
	key, group := q.Get("key"), q.Get("group")
	switch {
	case key != "" && group != "":
		openai.BadRequest("key", "give key or group, not both").Write(w)
		return
	case key != "":
		f.Scope = "key:" + key
	case group != "":
		f.Scope = "group:" + group
	}
	res, err := b.cache.Purge(r.Context(), f)
	if err != nil {
		openai.StatusError(http.StatusBadGateway, fmt.Sprintf("purge incomplete (%d entries removed): %v", res.Entries, err)).Write(w)
		return
	}
	b.log.Info("response cache purged", "model", f.Model, "scope", f.Scope, "entries", res.Entries, "vectors", res.Vectors)
	writeJSON(w, http.StatusOK, res)
}
