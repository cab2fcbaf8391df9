package tokenize

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func rejected(t *testing.T, p *Pool, reason string) float64 {
	t.Helper()
	var m dto.Metric
	if err := p.m.rejected.WithLabelValues(reason).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestPoolRunsAndRejectsTooLarge(t *testing.T) {
	reg := prometheus.NewRegistry()
	p := NewPool(PoolConfig{Workers: 1, MaxSize: 10}, reg)
	ran := false
	if err := p.Do(context.Background(), 10, func() { ran = true }); err != nil || !ran {
		t.Fatalf("Do() = %v, ran %v", err, ran)
	}
	err := p.Do(context.Background(), 11, func() { t.Error("ran a request over MaxSize") })
	if !errors.Is(err, ErrTooLarge) || RejectReason(err) != ReasonTooLarge {
		t.Errorf("Do(11) = %v, want ErrTooLarge", err)
	}
	if got := rejected(t, p, ReasonTooLarge); got != 1 {
		t.Errorf("too_large count = %v, want 1", got)
	}
}

func TestPoolWaitTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPool(PoolConfig{Workers: 1, MaxWait: 10 * time.Millisecond}, nil)
		release := make(chan struct{})
		started := make(chan struct{})
		go func() {
			_ = p.Do(context.Background(), 1, func() { close(started); <-release })
		}()
		<-started
		start := time.Now()
		err := p.Do(context.Background(), 1, func() { t.Error("ran while the only worker was busy") })
		if !errors.Is(err, ErrWaitTimeout) {
			t.Errorf("Do() = %v, want ErrWaitTimeout", err)
		}
		if waited := time.Since(start); waited != 10*time.Millisecond {
			t.Errorf("waited %v, want exactly MaxWait (fake clock)", waited)
		}
		if got := rejected(t, p, ReasonWaitTimeout); got != 1 {
			t.Errorf("wait_timeout count = %v, want 1", got)
		}
		close(release)
		synctest.Wait()
		// The worker is free again.
		if err := p.Do(context.Background(), 1, func() {}); err != nil {
			t.Errorf("Do() after release = %v", err)
		}
	})
}

func TestPoolWaiterGetsFreedWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPool(PoolConfig{Workers: 1, MaxWait: time.Second}, nil)
		release := make(chan struct{})
		started := make(chan struct{})
		go func() {
			_ = p.Do(context.Background(), 1, func() { close(started); <-release })
		}()
		<-started
		go func() {
			time.Sleep(100 * time.Millisecond)
			close(release)
		}()
		ran := false
		if err := p.Do(context.Background(), 1, func() { ran = true }); err != nil || !ran {
			t.Errorf("Do() = %v, ran %v; want to run once the worker is free", err, ran)
		}
	})
}

func TestPoolQueueFullAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPool(PoolConfig{Workers: 1, MaxQueue: 1, MaxWait: time.Hour}, nil)
		release := make(chan struct{})
		started := make(chan struct{})
		go func() {
			_ = p.Do(context.Background(), 1, func() { close(started); <-release })
		}()
		<-started
		ctx, cancel := context.WithCancel(context.Background())
		waitErr := make(chan error, 1)
		go func() { waitErr <- p.Do(ctx, 1, func() {}) }()
		synctest.Wait() // the second request is queued
		err := p.Do(context.Background(), 1, func() {})
		if !errors.Is(err, ErrQueueFull) {
			t.Errorf("Do() with a full queue = %v, want ErrQueueFull", err)
		}
		cancel()
		if err := <-waitErr; !errors.Is(err, context.Canceled) || RejectReason(err) != ReasonCanceled {
			t.Errorf("cancelled Do() = %v, want context.Canceled", err)
		}
		if rejected(t, p, ReasonQueueFull) != 1 || rejected(t, p, ReasonCanceled) != 1 {
			t.Error("queue_full and canceled not counted once each")
		}
		close(release)
	})
}

// TestPoolBoundsConcurrency floods a pool and checks that no more than
// Workers functions ever run at once and every request either ran or was
// rejected with a typed error.
func TestPoolBoundsConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, n = 3, 200
		p := NewPool(PoolConfig{Workers: workers, MaxWait: 5 * time.Millisecond, MaxQueue: 50}, nil)
		var mu sync.Mutex
		running, peak, ran, refused := 0, 0, 0, 0
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := p.Do(context.Background(), i, func() {
					mu.Lock()
					running++
					peak = max(peak, running)
					mu.Unlock()
					time.Sleep(time.Millisecond)
					mu.Lock()
					running--
					ran++
					mu.Unlock()
				})
				if err != nil {
					if RejectReason(err) == "" {
						t.Errorf("untyped error %v", err)
					}
					mu.Lock()
					refused++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if peak > workers {
			t.Errorf("peak concurrency %d, want <= %d", peak, workers)
		}
		if ran+refused != n || ran == 0 || refused == 0 {
			t.Errorf("ran %d, refused %d of %d; want both, adding up", ran, refused, n)
		}
	})
}

func TestPoolConfigValidate(t *testing.T) {
	err := PoolConfig{Workers: -1, MaxWait: -1, MaxQueue: -1, MaxSize: -1, LargeSize: -1, LargeWorkers: -1}.Validate()
	if err == nil {
		t.Fatal("Validate() accepted negative values")
	}
	for _, field := range []string{"workers", "max_wait", "max_queue", "max_size", "large_size", "large_workers"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("Validate() = %v, does not name %s", err, field)
		}
	}
	if err := (PoolConfig{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	c := NewPool(PoolConfig{Workers: -3}, nil).Config()
	if c.Workers <= 0 || c.MaxWait != DefaultPoolMaxWait || c.MaxSize != DefaultPoolMaxSize || c.MaxQueue != 64*c.Workers ||
		c.LargeSize != DefaultPoolLargeSize || c.LargeWorkers != max(1, c.Workers/2) {
		t.Errorf("defaults not applied: %+v", c)
	}
}

// TestPoolLargeRequestsLeaveRoom checks that large requests never hold more
// than LargeWorkers workers: with one large request running, another large
// one waits out MaxWait while a small one runs at once.
func TestPoolLargeRequestsLeaveRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPool(PoolConfig{Workers: 2, LargeWorkers: 1, LargeSize: 10, MaxWait: 10 * time.Millisecond}, nil)
		release := make(chan struct{})
		started := make(chan struct{})
		go func() {
			_ = p.Do(context.Background(), 11, func() { close(started); <-release })
		}()
		<-started
		err := p.Do(context.Background(), 11, func() { t.Error("a second large request ran") })
		if !errors.Is(err, ErrWaitTimeout) {
			t.Errorf("second large Do() = %v, want ErrWaitTimeout", err)
		}
		start := time.Now()
		ran := false
		if err := p.Do(context.Background(), 10, func() { ran = true }); err != nil || !ran {
			t.Errorf("small Do() = %v, ran %v; want it to run", err, ran)
		}
		if time.Since(start) != 0 {
			t.Error("the small request waited")
		}
		close(release)
		synctest.Wait()
		// Both lanes are free again: a large request runs at once.
		if err := p.Do(context.Background(), 11, func() {}); err != nil {
			t.Errorf("large Do() after release = %v", err)
		}
	})
}

// TestPoolLargeCancelReleases checks that a large request cancelled while
// waiting for a worker gives its large token back.
func TestPoolLargeCancelReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPool(PoolConfig{Workers: 1, LargeWorkers: 1, LargeSize: 10, MaxWait: time.Hour}, nil)
		release := make(chan struct{})
		started := make(chan struct{})
		go func() { // a small request holds the only worker
			_ = p.Do(context.Background(), 1, func() { close(started); <-release })
		}()
		<-started
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Do(ctx, 11, func() {}) }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled large Do() = %v", err)
		}
		close(release)
		synctest.Wait()
		if !p.tryAcquire(true) {
			t.Fatal("the large token was not given back")
		}
	})
}
