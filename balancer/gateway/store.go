package gateway

import (
	"context"
	"sync"
	"time"
)

// Store keeps bucket levels. Take refills both of key's buckets to now and
// runs op on them atomically: concurrent calls for one key never both take
// the last units. Implementations are safe for concurrent use.
type Store interface {
	Take(ctx context.Context, key string, q Quota, op Op) (Result, error)
}

// MemoryStore keeps the levels in this process.
type MemoryStore struct {
	now func() time.Time

	mu      sync.Mutex // protects the fields below
	clients map[string]*memClient
	ops     int
}

type memClient struct {
	req, tok level
	expires  time.Time
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store on clock now (nil: time.Now).
func NewMemoryStore(now func() time.Time) *MemoryStore {
	if now == nil {
		now = time.Now
	}
	return &MemoryStore{now: now, clients: map[string]*memClient{}}
}

// sweepEvery is how many operations pass between sweeps of clients whose
// buckets are full again (and so need no state).
const sweepEvery = 4096

// Take implements Store; it never fails.
func (s *MemoryStore) Take(_ context.Context, key string, q Quota, op Op) (Result, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ops++; s.ops >= sweepEvery {
		s.ops = 0
		for k, c := range s.clients {
			if now.After(c.expires) {
				delete(s.clients, k)
			}
		}
	}
	c := s.clients[key]
	if c == nil || now.After(c.expires) {
		c = &memClient{req: level{q.Requests.Burst, now}, tok: level{q.Tokens.Burst, now}}
		s.clients[key] = c
	}
	req, tok := q.Requests.refill(c.req, now), q.Tokens.refill(c.tok, now)
	req, tok, ok := apply(q, req, tok, op)
	c.req, c.tok = level{req, now}, level{tok, now}
	c.expires = now.Add(q.ttl())
	return Result{Allowed: ok, Levels: Levels{Requests: req, Tokens: tok}}, nil
}

// Len returns the number of clients with state.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}
