package tokenize

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Errors Pool.Do returns instead of running the work. The router routes such
// a request without a prediction.
var (
	// ErrTooLarge: the request is larger than PoolConfig.MaxSize.
	ErrTooLarge = errors.New("tokenize: request too large to tokenize")
	// ErrWaitTimeout: no worker became free within PoolConfig.MaxWait.
	ErrWaitTimeout = errors.New("tokenize: timed out waiting for a worker")
	// ErrQueueFull: PoolConfig.MaxQueue requests were already waiting.
	ErrQueueFull = errors.New("tokenize: too many requests waiting for a worker")
)

// Rejection reasons, the values of the reason label of
// inferrail_tokenize_pool_rejected_total.
const (
	ReasonTooLarge    = "too_large"
	ReasonWaitTimeout = "wait_timeout"
	ReasonQueueFull   = "queue_full"
	ReasonCanceled    = "canceled"
)

// RejectReason returns the metric reason for an error of Pool.Do, or "" if
// err is not a rejection.
func RejectReason(err error) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return ReasonTooLarge
	case errors.Is(err, ErrWaitTimeout):
		return ReasonWaitTimeout
	case errors.Is(err, ErrQueueFull):
		return ReasonQueueFull
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ReasonCanceled
	}
	return ""
}

// PoolConfig configures a Pool.
type PoolConfig struct {
	// Workers is how many tokenizations run at once. 0 means GOMAXPROCS.
	Workers int
	// MaxWait is the longest a request waits for a free worker before it
	// is routed without a prediction. 0 means DefaultPoolMaxWait.
	MaxWait time.Duration
	// MaxQueue is how many requests may wait at once; more are rejected at
	// once. 0 means 64 per worker.
	MaxQueue int
	// MaxSize is the largest request size (bytes of body) tokenized. 0
	// means DefaultPoolMaxSize.
	MaxSize int
	// LargeSize is the size above which a request is large. 0 means
	// DefaultPoolLargeSize.
	LargeSize int
	// LargeWorkers bounds how many workers large requests may hold at
	// once, so the rest stay free for ordinary requests. 0 means half the
	// workers (at least one).
	LargeWorkers int
}

// Defaults for PoolConfig.
const (
	DefaultPoolMaxWait   = 25 * time.Millisecond
	DefaultPoolMaxSize   = 8 << 20
	DefaultPoolLargeSize = 256 << 10
)

// WithDefaults returns c with zero fields set to their defaults.
func (c PoolConfig) WithDefaults() PoolConfig {
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultPoolMaxWait
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = 64 * c.Workers
	}
	if c.MaxSize == 0 {
		c.MaxSize = DefaultPoolMaxSize
	}
	if c.LargeSize == 0 {
		c.LargeSize = DefaultPoolLargeSize
	}
	if c.LargeWorkers == 0 {
		c.LargeWorkers = max(1, c.Workers/2)
	}
	c.LargeWorkers = min(c.LargeWorkers, c.Workers)
	return c
}

// Validate reports every invalid field at once.
func (c PoolConfig) Validate() error {
	var errs []error
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("tokenize.pool.workers must be >= 0, got %d", c.Workers))
	}
	if c.MaxWait < 0 {
		errs = append(errs, fmt.Errorf("tokenize.pool.max_wait must be >= 0, got %v", c.MaxWait))
	}
	if c.MaxQueue < 0 {
		errs = append(errs, fmt.Errorf("tokenize.pool.max_queue must be >= 0, got %d", c.MaxQueue))
	}
	if c.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("tokenize.pool.max_size must be >= 0, got %d", c.MaxSize))
	}
	if c.LargeSize < 0 {
		errs = append(errs, fmt.Errorf("tokenize.pool.large_size must be >= 0, got %d", c.LargeSize))
	}
	if c.LargeWorkers < 0 {
		errs = append(errs, fmt.Errorf("tokenize.pool.large_workers must be >= 0, got %d", c.LargeWorkers))
	}
	return errors.Join(errs...)
}

// Pool bounds the CPU spent tokenizing: at most Workers requests tokenize
// at once, a request waits at most MaxWait for a turn, one larger than
// MaxSize is not tokenized at all, and requests larger than LargeSize hold
// at most LargeWorkers workers, so a flood of huge prompts cannot starve the
// ordinary ones. A Pool is safe for concurrent use.
type Pool struct {
	cfg   PoolConfig
	slots chan struct{} // a token per running request
	large chan struct{} // a token per large request holding or awaiting a slot
	queue chan struct{} // a token per waiting request
	m     *poolMetrics
}

// NewPool returns a pool; zero fields of cfg take their defaults and
// negative ones are treated as zero (call cfg.Validate to reject them).
// reg may be nil.
func NewPool(cfg PoolConfig, reg prometheus.Registerer) *Pool {
	cfg.Workers = max(cfg.Workers, 0)
	cfg.MaxWait = max(cfg.MaxWait, 0)
	cfg.MaxQueue = max(cfg.MaxQueue, 0)
	cfg.MaxSize = max(cfg.MaxSize, 0)
	cfg.LargeSize = max(cfg.LargeSize, 0)
	cfg.LargeWorkers = max(cfg.LargeWorkers, 0)
	cfg = cfg.WithDefaults()
	return &Pool{
		cfg:   cfg,
		slots: make(chan struct{}, cfg.Workers),
		large: make(chan struct{}, cfg.LargeWorkers),
		queue: make(chan struct{}, cfg.MaxQueue),
		m:     newPoolMetrics(reg),
	}
}

// Config returns the pool's configuration with defaults applied.
func (p *Pool) Config() PoolConfig { return p.cfg }

// Do runs fn on the calling goroutine once a worker is free. size is the
// request's size in bytes. It returns ErrTooLarge, ErrQueueFull,
// ErrWaitTimeout or ctx's error without running fn; each rejection is
// counted by reason. fn runs to completion once started.
func (p *Pool) Do(ctx context.Context, size int, fn func()) error {
	if size > p.cfg.MaxSize {
		return p.reject(ReasonTooLarge, ErrTooLarge)
	}
	isLarge := size > p.cfg.LargeSize
	if p.tryAcquire(isLarge) {
		p.m.wait.Observe(0)
		return p.run(fn, isLarge)
	}
	select {
	case p.queue <- struct{}{}:
	default:
		return p.reject(ReasonQueueFull, ErrQueueFull)
	}
	p.m.waiting.Inc()
	start := time.Now()
	err := p.acquire(ctx, isLarge)
	<-p.queue
	p.m.waiting.Dec()
	p.m.wait.Observe(time.Since(start).Seconds())
	if err != nil {
		return p.reject(RejectReason(err), err)
	}
	return p.run(fn, isLarge)
}

// tryAcquire takes a worker (and a large token) if one is free now.
func (p *Pool) tryAcquire(isLarge bool) bool {
	if isLarge {
		select {
		case p.large <- struct{}{}:
		default:
			return false
		}
	}
	select {
	case p.slots <- struct{}{}:
		return true
	default:
		if isLarge {
			<-p.large
		}
		return false
	}
}

// acquire waits up to MaxWait in all for a worker (and a large token).
func (p *Pool) acquire(ctx context.Context, isLarge bool) error {
	t := time.NewTimer(p.cfg.MaxWait)
	defer t.Stop()
	if isLarge {
		select {
		case p.large <- struct{}{}:
		case <-t.C:
			return ErrWaitTimeout
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-t.C:
	case <-ctx.Done():
		if isLarge {
			<-p.large
		}
		return ctx.Err()
	}
	if isLarge {
		<-p.large
	}
	return ErrWaitTimeout
}

func (p *Pool) run(fn func(), isLarge bool) error {
	p.m.busy.Inc()
	start := time.Now()
	defer func() {
		p.m.run.Observe(time.Since(start).Seconds())
		p.m.busy.Dec()
		<-p.slots
		if isLarge {
			<-p.large
		}
	}()
	fn()
	return nil
}

func (p *Pool) reject(reason string, err error) error {
	p.m.rejected.WithLabelValues(reason).Inc()
	return err
}

type poolMetrics struct {
	rejected      *prometheus.CounterVec
	wait, run     prometheus.Histogram
	busy, waiting prometheus.Gauge
}

func newPoolMetrics(reg prometheus.Registerer) *poolMetrics {
	m := &poolMetrics{
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_tokenize_pool_rejected_total",
			Help: "Requests not tokenized (routed without a prediction), by reason.",
		}, []string{"reason"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "inferrail_tokenize_pool_wait_seconds",
			Help:    "Time a request waited for a tokenize worker.",
			Buckets: []float64{0, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
		}),
		run: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "inferrail_tokenize_pool_run_seconds",
			Help:    "Time a worker spent on one request: decoding its body, applying the chat template and tokenizing its prompt.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 14), // 25µs .. 0.2s
		}),
		busy: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inferrail_tokenize_pool_busy_workers", Help: "Tokenize workers running a request."}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inferrail_tokenize_pool_waiting_requests", Help: "Requests waiting for a tokenize worker."}),
	}
	for _, r := range []string{ReasonTooLarge, ReasonWaitTimeout, ReasonQueueFull, ReasonCanceled} {
		m.rejected.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.rejected, m.wait, m.run, m.busy, m.waiting)
	}
	return m
}
