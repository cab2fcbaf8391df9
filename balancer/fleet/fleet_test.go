package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// fakeClock is an injected clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func spec(id string, models ...string) Spec {
	u, _ := url.Parse("http://" + id + ".invalid:1")
	return Spec{ID: id, URL: u, Static: true, Models: models}
}

func newTestFleet(t *testing.T, specs []Spec, mod func(*Config)) (*Fleet, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	cfg := Config{Static: specs, Health: DefaultHealthConfig(), Now: clk.now}
	if mod != nil {
		mod(&cfg)
	}
	f, err := New(cfg, nil, nil, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return f, clk
}

func TestSnapshotGroupsByModel(t *testing.T) {
	f, _ := newTestFleet(t, []Spec{spec("b", "m1", "m2"), spec("a", "m1"), spec("c", "m2")}, nil)
	s := f.Snapshot()
	got := map[string][]string{}
	for name, set := range s.Models {
		for _, r := range set.Replicas {
			got[name] = append(got[name], r.ID)
		}
	}
	want := map[string][]string{"m1": {"a", "b"}, "m2": {"b", "c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"m1", "m2"}, s.ModelNames); diff != "" {
		t.Errorf("model names (-want +got):\n%s", diff)
	}
	if s.Replica("b") == nil || s.Replica("zz") != nil {
		t.Error("Replica lookup")
	}
}

func TestNewRejectsBadStatic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		specs []Spec
	}{
		{"duplicate", []Spec{spec("a", "m"), spec("a", "m")}},
		{"no id", []Spec{{URL: spec("x").URL}}},
		{"no url", []Spec{{ID: "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(Config{Static: tc.specs, Health: DefaultHealthConfig()}, nil, nil, nil, nil); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// TestCapsNeverOvershoot races many goroutines acquiring and releasing a
// replica with random caps: in flight and pending never exceed them.
func TestCapsNeverOvershoot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		maxConc, maxPend := rng.IntN(8), rng.IntN(8)
		s := spec("r", "m")
		s.MaxConcurrency, s.MaxPending = maxConc, maxPend
		r := newReplica(s)
		var peakIn, peakPend int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				local := rand.New(rand.NewPCG(uint64(trial), uint64(g)))
				for range 500 {
					ticket, ok := r.TryAcquire(10, 0)
					if !ok {
						continue
					}
					in, pend := r.Counters.InFlight.Load(), r.Counters.Pending.Load()
					mu.Lock()
					peakIn, peakPend = max(peakIn, in), max(peakPend, pend)
					mu.Unlock()
					first := local.IntN(2) == 0
					if first {
						r.Counters.Prefilled(10, ticket, time.Now())
					}
					r.Counters.Done(10, 0, ticket, first)
				}
			})
		}
		wg.Wait()
		if maxConc > 0 && peakIn > int64(maxConc) {
			t.Errorf("trial %d: in flight reached %d > cap %d", trial, peakIn, maxConc)
		}
		if maxPend > 0 && peakPend > int64(maxPend) {
			t.Errorf("trial %d: pending reached %d > cap %d", trial, peakPend, maxPend)
		}
		c := &r.Counters
		if c.InFlight.Load() != 0 || c.Pending.Load() != 0 || c.PendingPrefillTokens.Load() != 0 {
			t.Errorf("trial %d: counters not back to zero: %d %d %d", trial, c.InFlight.Load(), c.Pending.Load(), c.PendingPrefillTokens.Load())
		}
	}
}

func TestEjectionDoublesAndEnds(t *testing.T) {
	f, clk := newTestFleet(t, []Spec{spec("a", "m"), spec("b", "m")}, func(c *Config) {
		c.Health.FailureThreshold = 3
		c.Health.BaseEjection = time.Second
		c.Health.MaxEjection = 3 * time.Second
	})
	a := f.Snapshot().Replica("a")
	down := a.Down()
	eject := func() time.Duration {
		t.Helper()
		for i := range 3 {
			if got := f.ReportFailure(a); got != (i == 2) {
				t.Fatalf("failure %d: ejected = %v", i+1, got)
			}
		}
		return time.Unix(0, a.health.until.Load()).Sub(clk.now())
	}
	var lengths []time.Duration
	for range 4 {
		lengths = append(lengths, eject())
		if a.Healthy(clk.now()) || a.State(clk.now()) != StateEjected {
			t.Fatal("ejected replica is healthy")
		}
		clk.add(lengths[len(lengths)-1])
		if !a.Healthy(clk.now()) {
			t.Fatal("replica still ejected after its ejection ended")
		}
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}, lengths); diff != "" {
		t.Errorf("ejection lengths (-want +got):\n%s", diff)
	}
	if !errors.Is(context.Cause(down), ErrReplicaDown) {
		t.Errorf("Down context not cancelled: %v", context.Cause(down))
	}
	// A success after the ejection resets the doubling.
	f.ReportSuccess(a)
	if got := eject(); got != time.Second {
		t.Errorf("after a success the ejection lasts %v, want 1s", got)
	}
}

func TestEjectionNeverExceedsShare(t *testing.T) {
	for _, tc := range []struct {
		replicas int
		share    float64
		want     int
	}{
		{1, 0.5, 0},
		{2, 0.5, 1},
		{4, 0.5, 2},
		{5, 0.5, 2},
		{10, 0.3, 3},
		{3, 1, 3},
		{3, 0, 0},
	} {
		t.Run(fmt.Sprintf("%d@%v", tc.replicas, tc.share), func(t *testing.T) {
			var specs []Spec
			for i := range tc.replicas {
				specs = append(specs, spec(fmt.Sprintf("r%d", i), "m"))
			}
			f, clk := newTestFleet(t, specs, func(c *Config) {
				c.Health.FailureThreshold = 1
				c.Health.MaxEjectedShare = tc.share
			})
			var wg sync.WaitGroup
			for _, r := range f.Snapshot().Replicas {
				wg.Go(func() { f.ReportFailure(r) })
			}
			wg.Wait()
			ejected := 0
			for _, r := range f.Snapshot().Replicas {
				if r.State(clk.now()) == StateEjected {
					ejected++
				}
			}
			if ejected != tc.want {
				t.Errorf("ejected %d, want %d", ejected, tc.want)
			}
		})
	}
}

type fakeProber struct {
	mu   sync.Mutex
	errs map[string]error
}

func (p *fakeProber) Probe(ctx context.Context, r *Replica, path string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errs[r.ID]
}

func TestProbeThresholds(t *testing.T) {
	f, clk := newTestFleet(t, []Spec{spec("a", "m")}, func(c *Config) {
		c.Health.UnhealthyThreshold = 2
		c.Health.HealthyThreshold = 2
	})
	p := &fakeProber{errs: map[string]error{}}
	f.prober = p
	a := f.Snapshot().Replica("a")
	steps := []struct {
		err  error
		want State
	}{
		{errors.New("down"), StateHealthy},
		{errors.New("down"), StateUnhealthy},
		{nil, StateUnhealthy},
		{errors.New("down"), StateUnhealthy},
		{nil, StateUnhealthy},
		{nil, StateHealthy},
	}
	for i, s := range steps {
		p.errs["a"] = s.err
		f.probeAll(context.Background())
		if got := a.State(clk.now()); got != s.want {
			t.Fatalf("step %d: state %s, want %s", i, got, s.want)
		}
	}
	if a.Down().Err() != nil {
		t.Error("a healthy replica's Down context is cancelled")
	}
}

func TestFullReplicaAtCap(t *testing.T) {
	s := spec("r", "m")
	s.MaxConcurrency = 1
	r := newReplica(s)
	t1, ok1 := r.TryAcquire(0, 0)
	if _, ok2 := r.TryAcquire(0, 0); !ok1 || ok2 {
		t.Fatal("cap of 1 not enforced")
	}
	r.Counters.Done(0, 0, t1, false)
	if _, ok := r.TryAcquire(0, 0); !ok {
		t.Fatal("released slot not reusable")
	}
}
