package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"
)

// ErrStoreDown is returned by Limiter.Take when the shared store failed and
// the limiter fails closed.
var ErrStoreDown = errors.New("rate limit store unreachable")

// Limiter takes units from clients' buckets: from the shared store when
// there is one, else (or while the shared store is unreachable and the
// limiter fails open) from its own memory. It is safe for concurrent use
// and outlives reloads, so bucket levels survive them.
type Limiter struct {
	shared     Store // nil: memory only
	local      *MemoryStore
	failClosed bool
	retry      time.Duration
	timeout    time.Duration
	now        func() time.Time
	log        *slog.Logger
	m          *Metrics

	// downUntil is the UnixNano time before which the shared store is not
	// tried again after a failure (0: up).
	downUntil atomic.Int64
}

// LimiterConfig configures a Limiter.
type LimiterConfig struct {
	// Shared is the store shared by balancers (nil: memory only).
	Shared Store
	// FailClosed, RetryInterval and Timeout: see RedisConfig.
	FailClosed    bool
	RetryInterval time.Duration
	Timeout       time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// NewLimiter returns a limiter. log may be nil; m may be nil (no metrics).
func NewLimiter(cfg LimiterConfig, log *slog.Logger, m *Metrics) *Limiter {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Limiter{shared: cfg.Shared, local: NewMemoryStore(cfg.Now), failClosed: cfg.FailClosed,
		retry: cfg.RetryInterval, timeout: cfg.Timeout, now: cfg.Now, log: log, m: m}
	if l.retry <= 0 {
		l.retry = time.Second
	}
	if l.timeout <= 0 {
		l.timeout = 100 * time.Millisecond
	}
	if m != nil && l.shared != nil {
		m.storeUp.Set(1)
	}
	return l
}

// Shared reports whether the limiter has a shared store.
func (l *Limiter) Shared() bool { return l.shared != nil }

// Take runs op on key's buckets. With a shared store that fails (or failed
// less than RetryInterval ago), it fails open onto the limiter's memory, or
// returns ErrStoreDown when it fails closed.
func (l *Limiter) Take(ctx context.Context, key string, q Quota, op Op) (Result, error) {
	if l.shared == nil {
		return l.local.Take(ctx, key, q, op)
	}
	now := l.now()
	if until := l.downUntil.Load(); until == 0 || now.UnixNano() >= until {
		tctx, cancel := context.WithTimeout(ctx, l.timeout)
		res, err := l.shared.Take(tctx, key, q, op)
		cancel()
		if err == nil {
			if l.downUntil.Swap(0) != 0 {
				l.log.Info("rate limit store reachable again")
				l.setUp(1)
			}
			return res, nil
		}
		if ctx.Err() != nil { // the client went away, not the store
			return Result{}, ctx.Err()
		}
		if l.downUntil.Swap(now.Add(l.retry).UnixNano()) == 0 {
			l.log.Warn("rate limit store unreachable", "fail_closed", l.failClosed, "err", err)
		}
		l.setUp(0)
		if l.m != nil {
			l.m.storeErrors.Inc()
		}
	}
	if l.failClosed {
		if l.m != nil {
			l.m.fallback.WithLabelValues("closed").Inc()
		}
		return Result{}, ErrStoreDown
	}
	if l.m != nil {
		l.m.fallback.WithLabelValues("open").Inc()
	}
	return l.local.Take(ctx, key, q, op)
}

func (l *Limiter) setUp(v float64) {
	if l.m != nil {
		l.m.storeUp.Set(v)
	}
}

// Close closes the shared store when it can be closed.
func (l *Limiter) Close() error {
	if c, ok := l.shared.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
