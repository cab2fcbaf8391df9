package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// HealthConfig configures active probes and passive ejection.
type HealthConfig struct {
	// ProbeInterval is the period of active probes (0 disables them).
	ProbeInterval time.Duration `yaml:"probe_interval"`
	// ProbeTimeout bounds one probe.
	ProbeTimeout time.Duration `yaml:"probe_timeout"`
	// ProbePath is the path probed on each replica (vLLM serves /health).
	ProbePath string `yaml:"probe_path"`
	// UnhealthyThreshold consecutive failed probes take a replica out;
	// HealthyThreshold consecutive good ones bring it back.
	UnhealthyThreshold int `yaml:"unhealthy_threshold"`
	HealthyThreshold   int `yaml:"healthy_threshold"`
	// FailureThreshold consecutive failed requests (connect errors,
	// 502/503/504, first-byte timeouts, malformed or broken answers) eject
	// a replica (0 disables).
	FailureThreshold int `yaml:"failure_threshold"`
	// BaseEjection is the first ejection's length; each further ejection
	// without a success in between doubles it, up to MaxEjection.
	BaseEjection time.Duration `yaml:"base_ejection"`
	MaxEjection  time.Duration `yaml:"max_ejection"`
	// MaxEjectedShare is the largest share of a model's replicas that
	// passive ejection may take out at once, in [0,1].
	MaxEjectedShare float64 `yaml:"max_ejected_share"`
}

// DefaultHealthConfig returns the defaults.
func DefaultHealthConfig() HealthConfig {
	return HealthConfig{
		ProbeInterval:      5 * time.Second,
		ProbeTimeout:       2 * time.Second,
		ProbePath:          "/health",
		UnhealthyThreshold: 2,
		HealthyThreshold:   1,
		FailureThreshold:   3,
		BaseEjection:       5 * time.Second,
		MaxEjection:        2 * time.Minute,
		MaxEjectedShare:    0.5,
	}
}

// Validate reports every invalid field at once; path prefixes the names.
func (c HealthConfig) Validate(path string) error {
	var errs []error
	bad := func(field, want string, v any) {
		errs = append(errs, fmt.Errorf("%s.%s must be %s, got %v", path, field, want, v))
	}
	if c.ProbeInterval < 0 {
		bad("probe_interval", ">= 0", c.ProbeInterval)
	}
	if c.ProbeInterval > 0 && c.ProbeTimeout <= 0 {
		bad("probe_timeout", "> 0", c.ProbeTimeout)
	}
	if c.ProbePath == "" || c.ProbePath[0] != '/' {
		bad("probe_path", "a path starting with /", fmt.Sprintf("%q", c.ProbePath))
	}
	if c.UnhealthyThreshold < 1 {
		bad("unhealthy_threshold", ">= 1", c.UnhealthyThreshold)
	}
	if c.HealthyThreshold < 1 {
		bad("healthy_threshold", ">= 1", c.HealthyThreshold)
	}
	if c.FailureThreshold < 0 {
		bad("failure_threshold", ">= 0", c.FailureThreshold)
	}
	if c.BaseEjection <= 0 {
		bad("base_ejection", "> 0", c.BaseEjection)
	}
	if c.MaxEjection < c.BaseEjection {
		bad("max_ejection", ">= base_ejection", c.MaxEjection)
	}
	if !(c.MaxEjectedShare >= 0 && c.MaxEjectedShare <= 1) {
		bad("max_ejected_share", "in [0,1]", c.MaxEjectedShare)
	}
	return errors.Join(errs...)
}

// health is a replica's health state.
type health struct {
	probeOK     atomic.Bool
	probeStreak atomic.Int64 // > 0: consecutive good probes; < 0: bad ones
	failures    atomic.Int64 // consecutive failed requests
	until       atomic.Int64 // ejected until (Unix ns); 0: not ejected
	ejections   atomic.Int64 // ejections since the last success
}

func (h *health) ejected(now time.Time) bool {
	u := h.until.Load()
	return u != 0 && now.UnixNano() < u
}

// Prober checks one replica's health; the balancer implements it over HTTP.
type Prober interface {
	// Probe returns nil when the replica answered its health path with 200.
	Probe(ctx context.Context, r *Replica, path string) error
}

// ReportSuccess records a request that got a whole response from r.
func (f *Fleet) ReportSuccess(r *Replica) {
	if r.health.failures.Load() != 0 {
		r.health.failures.Store(0)
	}
	if r.health.ejections.Load() != 0 && !r.health.ejected(f.now()) {
		r.health.ejections.Store(0)
	}
}

// ReportFailure records a failed request to r (connect error, 502/503/504,
// first-byte timeout, a malformed or broken answer) and ejects r after
// FailureThreshold in a row, unless that would take out more than
// MaxEjectedShare of a model's replicas. It reports whether r was ejected.
func (f *Fleet) ReportFailure(r *Replica) bool {
	cfg := f.cfg.Health
	n := r.health.failures.Add(1)
	if cfg.FailureThreshold == 0 || n < int64(cfg.FailureThreshold) {
		return false
	}
	now := f.now()
	f.ejectMu.Lock()
	defer f.ejectMu.Unlock()
	if r.health.ejected(now) || !f.mayEject(r, now) {
		return false
	}
	k := r.health.ejections.Add(1) - 1
	d := time.Duration(float64(cfg.BaseEjection) * math.Pow(2, float64(min(k, 30))))
	d = min(d, cfg.MaxEjection)
	r.health.until.Store(now.Add(d).UnixNano())
	r.health.failures.Store(0)
	r.markDown()
	f.count(f.m.ejections, r)
	f.log.Warn("replica ejected", "replica", r.ID, "for", d, "ejections", k+1)
	f.wakeReadmit(now.Add(d))
	return true
}

// mayEject reports whether ejecting r keeps every model it serves within
// MaxEjectedShare of its replicas out. f.ejectMu must be held.
func (f *Fleet) mayEject(r *Replica, now time.Time) bool {
	s := f.Snapshot()
	for _, m := range r.Models {
		set := s.Models[m]
		if set == nil {
			continue
		}
		down := 0
		for _, x := range set.Replicas {
			if x != r && x.health.ejected(now) {
				down++
			}
		}
		if float64(down+1) > f.cfg.Health.MaxEjectedShare*float64(len(set.Replicas)) {
			return false
		}
	}
	return true
}

// wakeReadmit makes the health loop look again at about t, when an ejection
// ends, so the replica's Down context is renewed. Wakes are never lost: the
// earliest one not yet taken by the loop is kept beside the signal.
func (f *Fleet) wakeReadmit(t time.Time) {
	f.readmitMu.Lock()
	if f.readmitAt.IsZero() || t.Before(f.readmitAt) {
		f.readmitAt = t
	}
	f.readmitMu.Unlock()
	select {
	case f.readmit <- struct{}{}:
	default:
	}
}

// takeReadmit returns the earliest wake asked for since the last call.
func (f *Fleet) takeReadmit() time.Time {
	f.readmitMu.Lock()
	defer f.readmitMu.Unlock()
	t := f.readmitAt
	f.readmitAt = time.Time{}
	return t
}

// healthLoop runs the active probes and renews the Down context of replicas
// whose ejection ended.
func (f *Fleet) healthLoop(ctx context.Context) error {
	interval := f.cfg.Health.ProbeInterval
	var tick <-chan time.Time
	if interval > 0 && f.prober != nil {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
		f.probeAll(ctx)
	}
	readmit := time.NewTimer(time.Hour)
	defer readmit.Stop()
	var armed time.Time // when readmit fires; zero: idle
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			f.probeAll(ctx)
		case <-f.readmit:
			// Keep the earliest end: a later ejection must not push back
			// the readmission of one that ends sooner.
			if t := f.takeReadmit(); !t.IsZero() && (armed.IsZero() || t.Before(armed)) {
				armed = t
				readmit.Reset(max(time.Until(t), 0) + time.Millisecond)
			}
		case <-readmit.C:
			armed = time.Time{}
			f.renewDown(f.now()) // wakes the loop again for the next end
		}
	}
}

// renewDown renews the Down context of every replica that is up again.
func (f *Fleet) renewDown(now time.Time) {
	next := time.Time{}
	for _, r := range f.Snapshot().Replicas {
		if r.Healthy(now) {
			r.markUp()
		} else if u := r.health.until.Load(); u != 0 {
			if t := time.Unix(0, u); t.After(now) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	if !next.IsZero() {
		f.wakeReadmit(next)
	}
}

// probeAll probes every replica at once and waits for the results.
func (f *Fleet) probeAll(ctx context.Context) {
	cfg := f.cfg.Health
	var wg sync.WaitGroup
	for _, r := range f.Snapshot().Replicas {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, cfg.ProbeTimeout)
			defer cancel()
			probePath := cfg.ProbePath
			if r.ProbePath != "" {
				probePath = r.ProbePath
			}
			err := f.prober.Probe(pctx, r, probePath)
			if ctx.Err() != nil {
				return
			}
			f.probeResult(r, err)
		})
	}
	wg.Wait()
}

// probeResult applies one probe result to r.
func (f *Fleet) probeResult(r *Replica, err error) {
	cfg := f.cfg.Health
	h := &r.health
	if err == nil {
		s := max(h.probeStreak.Load(), 0) + 1
		h.probeStreak.Store(s)
		if !h.probeOK.Load() && s >= int64(cfg.HealthyThreshold) {
			h.probeOK.Store(true)
			f.log.Info("replica healthy again", "replica", r.ID)
			if r.Healthy(f.now()) {
				r.markUp()
			}
		}
		return
	}
	f.count(f.m.probeFailures, r)
	s := min(h.probeStreak.Load(), 0) - 1
	h.probeStreak.Store(s)
	if h.probeOK.Load() && -s >= int64(cfg.UnhealthyThreshold) {
		h.probeOK.Store(false)
		r.markDown()
		f.log.Warn("replica failed its health probes", "replica", r.ID, "err", err)
	}
}
