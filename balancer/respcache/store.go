package respcache

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Filter selects entries by canonical model and scope ("": any).
type Filter struct {
	Model string `json:"model,omitempty"`
	Scope string `json:"scope,omitempty"`
}

func (f Filter) matches(model, scope string) bool {
	return (f.Model == "" || f.Model == model) && (f.Scope == "" || f.Scope == scope)
}

// store holds entries by key. Implementations are safe for concurrent use.
type store interface {
	// Get returns the entry under key, or nil when there is none.
	Get(ctx context.Context, key string) (*Entry, error)
	// Set stores e under key for ttl.
	Set(ctx context.Context, key string, e *Entry, ttl time.Duration) error
	// Purge removes the entries f selects and returns how many.
	Purge(ctx context.Context, f Filter) (int, error)
}

// storeKey is the key of rq's answer: scope and model tags first, so a
// purge can select them by pattern.
func storeKey(scope, model, key string) string { return Tag(scope) + ":" + Tag(model) + ":" + key }

// memStore is the in-memory store: entries under a byte budget, the least
// recently used evicted first, each dropped once its TTL ends. The list and
// map are hand-written on container/list (no LRU module is in go.mod).
type memStore struct {
	max int64
	now func() time.Time
	m   *metrics

	mu    sync.Mutex // protects the fields below
	size  int64
	ll    *list.List // of *memItem, most recently used first
	items map[string]*list.Element
}

type memItem struct {
	key     string
	e       *Entry
	expires time.Time
	size    int64
}

var _ store = (*memStore)(nil)

func newMemStore(maxBytes int64, now func() time.Time, m *metrics) *memStore {
	return &memStore{max: maxBytes, now: now, m: m, ll: list.New(), items: map[string]*list.Element{}}
}

// Get implements store.
func (s *memStore) Get(_ context.Context, key string) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.items[key]
	if el == nil {
		return nil, nil
	}
	it := el.Value.(*memItem)
	if !s.now().Before(it.expires) {
		s.remove(el, reasonTTL)
		return nil, nil
	}
	s.ll.MoveToFront(el)
	return it.e, nil
}

// Set implements store. An entry larger than the whole budget is not kept.
func (s *memStore) Set(_ context.Context, key string, e *Entry, ttl time.Duration) error {
	it := &memItem{key: key, e: e, expires: s.now().Add(ttl), size: e.size()}
	if it.size > s.max {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := s.items[key]; el != nil {
		s.remove(el, "")
	}
	s.items[key] = s.ll.PushFront(it)
	s.size += it.size
	for s.size > s.max {
		s.remove(s.ll.Back(), reasonBudget)
	}
	s.gauges()
	return nil
}

// Purge implements store.
func (s *memStore) Purge(_ context.Context, f Filter) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for el := s.ll.Front(); el != nil; {
		next := el.Next()
		if it := el.Value.(*memItem); f.matches(it.e.Model, it.e.Scope) {
			s.remove(el, reasonPurge)
			n++
		}
		el = next
	}
	return n, nil
}

// remove drops el (under mu), counting an eviction for reason ("": a
// replacement, not counted).
func (s *memStore) remove(el *list.Element, reason string) {
	it := el.Value.(*memItem)
	s.ll.Remove(el)
	delete(s.items, it.key)
	s.size -= it.size
	if reason != "" {
		s.m.evictions.WithLabelValues(CacheExact, reason).Inc()
	}
	s.gauges()
}

func (s *memStore) gauges() {
	s.m.size.WithLabelValues(CacheExact).Set(float64(s.size))
	s.m.entries.WithLabelValues(CacheExact).Set(float64(s.ll.Len()))
}

// Len returns the number of entries and their bytes.
func (s *memStore) Len() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ll.Len(), s.size
}
