package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/inferrail/inferrail/internal/redistest"
)

func redisStore(t *testing.T, addr string) *RedisStore {
	t.Helper()
	cfg := DefaultConfig().RateLimits.Redis
	cfg.Addr, cfg.Timeout, cfg.KeyPrefix = addr, time.Second, fmt.Sprintf("test:%s:", t.Name())
	s := NewRedisStore(cfg)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestRedisScriptMatchesApply runs the same random operations on the Lua
// script and on the Go code it mirrors. Rates are tiny so that the two
// clocks (Redis's TIME, the test's) refill nothing measurable.
func TestRedisScriptMatchesApply(t *testing.T) {
	srv := redistest.Start(t)
	rs := redisStore(t, srv.Addr)
	c := newClock()
	ms := NewMemoryStore(c.now)
	rng := rand.New(rand.NewPCG(1, 2))
	quotas := []Quota{
		{Requests: Bucket{Rate: 1e-9, Burst: 5}},
		{Tokens: Bucket{Rate: 1e-9, Burst: 1000}},
		{Requests: Bucket{Rate: 1e-9, Burst: 3}, Tokens: Bucket{Rate: 1e-9, Burst: 200}},
	}
	for qi, q := range quotas {
		key := fmt.Sprintf("q%d", qi)
		for i := range 200 {
			op := Op{Requests: 1, Tokens: float64(rng.IntN(120))}
			if rng.IntN(5) == 0 {
				op = Op{Tokens: float64(rng.IntN(300)), Force: true}
			}
			want := takeN(t, ms, key, q, op)
			got := takeN(t, rs, key, q, op)
			if got.Allowed != want.Allowed || !near(got.Levels.Requests, want.Levels.Requests) || !near(got.Levels.Tokens, want.Levels.Tokens) {
				t.Fatalf("quota %d op %d %+v: redis %+v, memory %+v", qi, i, op, got, want)
			}
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

// TestRedisStoreIsAtomic takes from one bucket on many connections at once:
// exactly the burst is allowed.
func TestRedisStoreIsAtomic(t *testing.T) {
	srv := redistest.Start(t)
	q := Quota{Requests: Bucket{Rate: 1e-9, Burst: 100}}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		s := redisStore(t, srv.Addr) // one client (pool) per "balancer"
		wg.Go(func() {
			for range 40 {
				r, err := s.Take(context.Background(), "shared", q, Op{Requests: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if r.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 100 {
		t.Errorf("%d of 320 concurrent requests allowed with a burst of 100, want exactly 100", got)
	}
}

// TestRedisStoreRefills empties a bucket and polls until Redis's clock has
// refilled it.
func TestRedisStoreRefills(t *testing.T) {
	srv := redistest.Start(t)
	s := redisStore(t, srv.Addr)
	q := Quota{Requests: Bucket{Rate: 50, Burst: 1}}
	if !takeN(t, s, "k", q, Op{Requests: 1}).Allowed {
		t.Fatal("first request refused")
	}
	deadline := time.Now().Add(10 * time.Second) // hang guard
	for !takeN(t, s, "k", q, Op{Requests: 1}).Allowed {
		if time.Now().After(deadline) {
			t.Fatal("the bucket never refilled")
		}
		time.Sleep(5 * time.Millisecond) // polling Redis's clock
	}
}

func TestLimiterFailsOpenWhenRedisStops(t *testing.T) {
	srv := redistest.Start(t)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	rs := redisStore(t, srv.Addr)
	l := NewLimiter(LimiterConfig{Shared: rs, RetryInterval: time.Hour, Timeout: time.Second}, nil, m)
	q := Quota{Requests: Bucket{Rate: 1e-9, Burst: 2}}
	ctx := context.Background()
	if r, err := l.Take(ctx, "k", q, Op{Requests: 1}); err != nil || !r.Allowed {
		t.Fatalf("through redis: %+v, %v", r, err)
	}
	if got := testutil.ToFloat64(m.storeUp); got != 1 {
		t.Errorf("store_up = %v with redis up", got)
	}
	srv.Stop()
	// Fail open: the local buckets decide, starting full.
	for i := range 2 {
		r, err := l.Take(ctx, "k", q, Op{Requests: 1})
		if err != nil || !r.Allowed {
			t.Fatalf("local take %d: %+v, %v", i, r, err)
		}
	}
	if r, _ := l.Take(ctx, "k", q, Op{Requests: 1}); r.Allowed {
		t.Error("the local fallback does not limit")
	}
	if got := testutil.ToFloat64(m.storeUp); got != 0 {
		t.Errorf("store_up = %v with redis down", got)
	}
	if got := testutil.ToFloat64(m.storeErrors); got != 1 {
		t.Errorf("store errors = %v, want 1 (later calls wait for retry_interval)", got)
	}
	if got := testutil.ToFloat64(m.fallback.WithLabelValues("open")); got != 3 {
		t.Errorf("fallback{mode=open} = %v, want 3", got)
	}
}

// failing is a Store that fails while down is set.
type failing struct {
	down  atomic.Bool
	calls atomic.Int64
	mem   *MemoryStore
}

func (f *failing) Take(ctx context.Context, key string, q Quota, op Op) (Result, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return Result{}, errors.New("connection refused")
	}
	return f.mem.Take(ctx, key, q, op)
}

func TestLimiterFailsClosedAndRecovers(t *testing.T) {
	c := newClock()
	st := &failing{mem: NewMemoryStore(c.now)}
	m := NewMetrics(nil)
	l := NewLimiter(LimiterConfig{Shared: st, FailClosed: true, RetryInterval: time.Second, Now: c.now}, nil, m)
	q := Quota{Requests: Bucket{Rate: 1, Burst: 10}}
	ctx := context.Background()
	st.down.Store(true)
	if _, err := l.Take(ctx, "k", q, Op{Requests: 1}); !errors.Is(err, ErrStoreDown) {
		t.Fatalf("fail closed: err = %v, want ErrStoreDown", err)
	}
	if _, err := l.Take(ctx, "k", q, Op{Requests: 1}); !errors.Is(err, ErrStoreDown) {
		t.Fatalf("second: err = %v", err)
	}
	if n := st.calls.Load(); n != 1 {
		t.Errorf("store called %d times within retry_interval, want 1", n)
	}
	st.down.Store(false)
	c.advance(time.Second)
	if r, err := l.Take(ctx, "k", q, Op{Requests: 1}); err != nil || !r.Allowed {
		t.Fatalf("after recovery: %+v, %v", r, err)
	}
	if got := testutil.ToFloat64(m.storeUp); got != 1 {
		t.Errorf("store_up = %v after recovery", got)
	}
	if got := testutil.ToFloat64(m.fallback.WithLabelValues("closed")); got != 2 {
		t.Errorf("fallback{mode=closed} = %v, want 2", got)
	}
}

func TestRedisStoreUnreachableFailsFast(t *testing.T) {
	cfg := DefaultConfig().RateLimits.Redis
	cfg.Addr = "127.0.0.1:1" // nothing listens on port 1
	s := NewRedisStore(cfg)
	defer s.Close()
	if _, err := s.Take(context.Background(), "k", Quota{Requests: Bucket{Rate: 1, Burst: 1}}, Op{Requests: 1}); err == nil {
		t.Fatal("Take on an unreachable Redis succeeded")
	}
}
