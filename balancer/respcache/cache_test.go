package respcache

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/inferrail/inferrail/internal/redistest"
)

// bagOfWords is a test embedding: each word adds 1 at its hashed position.
func bagOfWords(text string, dims int) []float64 {
	v := make([]float64, dims)
	for _, w := range strings.Fields(strings.ToLower(strings.Trim(text, "?!."))) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dims)]++
	}
	return v
}

// embedServer serves /v1/embeddings with bagOfWords of dims; calls counts
// requests.
func embedServer(t *testing.T, dims int, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct{ Input string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		_ = json.NewEncoder(w).Encode(map[string]any{"data": []any{map[string]any{"embedding": bagOfWords(req.Input, dims)}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func testConfig(url string) Config {
	cfg := DefaultConfig()
	cfg.Exact.Enabled = true
	cfg.Semantic.Enabled = true
	cfg.Semantic.MaxDistance = 0.3
	cfg.Semantic.Embeddings.URL = url
	cfg.Semantic.Embeddings.Model = "emb"
	// A hang guard for a loaded machine, not the bound under test (the
	// hang test sets its own).
	cfg.Semantic.Embeddings.Timeout = 10 * time.Second
	return cfg
}

func chat(q string) []byte {
	b, _ := json.Marshal(map[string]any{"model": "m", "temperature": 0, "messages": []any{map[string]any{"role": "user", "content": q}}})
	return b
}

func answer() *Entry {
	return &Entry{Status: 200, ContentType: "application/json", Body: []byte(`{"choices":[{"message":{"content":"Paris"}}]}`)}
}

func newTestCache(t *testing.T, cfg Config) *Cache {
	t.Helper()
	c, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestSemanticHitOnParaphraseWithinTenant(t *testing.T) {
	var calls atomic.Int64
	c := newTestCache(t, testConfig(embedServer(t, 64, &calls).URL))
	ctx := context.Background()
	q := func(scope, text string) *Lookup {
		return c.Lookup(ctx, Query{Kind: KindChat, Scope: scope, Model: "m", Body: chat(text), Header: http.Header{}})
	}
	l := q("key:a", "what is the capital of France?")
	if l.Status != StatusMiss || !l.Storable() {
		t.Fatalf("first lookup: %+v", l)
	}
	c.Store(ctx, l, answer())
	if l := q("key:a", "what is the capital of France?"); l.Status != StatusHit || l.Layer != CacheExact {
		t.Errorf("repeat: %s %s", l.Status, l.Layer)
	}
	if l := q("key:a", "what is the capital city of France?"); l.Status != StatusHit || l.Layer != CacheSemantic || l.Distance <= 0 {
		t.Errorf("paraphrase: %s %s %v", l.Status, l.Layer, l.Distance)
	}
	if l := q("key:b", "what is the capital of France?"); l.Status != StatusMiss {
		t.Errorf("another tenant: %s", l.Status)
	}
	if l := q("key:a", "how do I bake bread at home"); l.Status != StatusMiss {
		t.Errorf("another question: %s", l.Status)
	}
	sampled := c.Lookup(ctx, Query{Kind: KindChat, Scope: "key:a", Model: "m", Header: http.Header{},
		Body: []byte(`{"model":"m","messages":[{"role":"user","content":"what is the capital of France?"}]}`)})
	if sampled.Status != StatusBypass || sampled.Storable() {
		t.Errorf("a sampled request: %+v", sampled)
	}
	noCache := c.Lookup(ctx, Query{Kind: KindChat, Scope: "key:a", Model: "m", Body: chat("what is the capital of France?"),
		Header: http.Header{"Cache-Control": {"no-cache"}}})
	if noCache.Status != StatusBypass || !noCache.Storable() {
		t.Errorf("no-cache: %+v", noCache)
	}
	res, err := c.Purge(ctx, Filter{Scope: "key:a"})
	if err != nil || res.Entries != 1 || res.Vectors != 1 {
		t.Errorf("purge: %+v %v", res, err)
	}
	if l := q("key:a", "what is the capital city of France?"); l.Status != StatusMiss {
		t.Errorf("after the purge: %s", l.Status)
	}
}

func TestEmbeddingEndpointHangIsBounded(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	cfg := testConfig(srv.URL)
	cfg.Semantic.Embeddings.Timeout = 20 * time.Millisecond
	cfg.Semantic.Embeddings.RetryInterval = time.Hour
	c := newTestCache(t, cfg)
	ctx := context.Background()
	// Without the bound Lookup would wait for the handler, which only
	// returns at the end of the test.
	for range 3 {
		l := c.Lookup(ctx, Query{Kind: KindChat, Model: "m", Body: chat("a question"), Header: http.Header{}})
		if l.Status != StatusMiss || l.vec != nil {
			t.Fatalf("lookup with the endpoint hung: %+v", l)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("the hung endpoint was called %d times within its retry interval, want 1", got)
	}
	if got := testutil.CollectAndCount(c.m.embedding, "inferrail_cache_embedding_duration_seconds"); got != 1 {
		t.Errorf("embedding results observed: %d series, want 1 (timeout)", got)
	}
	if got := testutil.ToFloat64(c.m.errors.WithLabelValues(CacheSemantic, "embed")); got != 3 {
		t.Errorf("embed errors = %v", got)
	}
}

func TestCheckRejectsAnotherDimension(t *testing.T) {
	var calls atomic.Int64
	cfg := testConfig(embedServer(t, 64, &calls).URL)
	cfg.Semantic.Dimensions = 32
	c := newTestCache(t, cfg)
	err := c.Check(context.Background(), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "has 64 dimensions but the semantic index holds 32") {
		t.Fatalf("Check = %v", err)
	}
	cfg.Semantic.Dimensions = 64
	if err := newTestCache(t, cfg).Check(context.Background(), 10*time.Second); err != nil {
		t.Errorf("Check with the right size: %v", err)
	}
}

func TestValidateMaxDistance(t *testing.T) {
	for _, d := range []float64{-0.1, 2.5} {
		cfg := DefaultConfig()
		cfg.Semantic.MaxDistance = d
		err := cfg.Validate("response_cache.")
		if err == nil || !strings.Contains(err.Error(), "response_cache.semantic.max_distance must be a cosine distance in [0, 2]") {
			t.Errorf("max_distance %v: %v", d, err)
		}
	}
}

// wait polls cond; the deadline is a hang guard.
func wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
}

func TestSharedThroughRedis(t *testing.T) {
	srv := redistest.Start(t)
	var calls atomic.Int64
	cfg := testConfig(embedServer(t, 64, &calls).URL)
	cfg.Redis.Addr, cfg.Redis.Timeout, cfg.Redis.KeyPrefix = srv.Addr, 10*time.Second, "test:"+t.Name()+":"
	a, b := newTestCache(t, cfg), newTestCache(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = b.Run(ctx) }()
	<-b.Synced()
	q := func(c *Cache, text string) *Lookup {
		return c.Lookup(ctx, Query{Kind: KindChat, Scope: "key:a", Model: "m", Body: chat(text), Header: http.Header{}})
	}
	l := q(a, "what is the capital of France?")
	a.Store(ctx, l, answer())
	if l := q(b, "what is the capital of France?"); l.Status != StatusHit || string(l.Hit.Body) != string(answer().Body) {
		t.Fatalf("exact through the other cache: %+v", l)
	}
	wait(t, "b's index to receive the vector", func() bool { return b.idx.Len() == 1 })
	if l := q(b, "what is the capital city of France?"); l.Status != StatusHit || l.Layer != CacheSemantic {
		t.Errorf("paraphrase through the other cache: %s %s", l.Status, l.Layer)
	}
	// A cache started later loads the vector with its first scan.
	c := newTestCache(t, cfg)
	go func() { _ = c.Run(ctx) }()
	<-c.Synced()
	if n := c.idx.Len(); n != 1 {
		t.Errorf("a later cache indexed %d vectors, want 1", n)
	}
	if _, err := a.Purge(ctx, Filter{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	wait(t, "the purge to reach b's index", func() bool { return b.idx.Len() == 0 })
	if l := q(b, "what is the capital of France?"); l.Status != StatusMiss {
		t.Errorf("after the purge: %s", l.Status)
	}
}
