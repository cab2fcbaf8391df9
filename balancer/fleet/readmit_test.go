package fleet

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A replica whose ejection ends is routable again at once, even when a later
// ejection of another replica ends later still: the later one must not push
// the earlier readmission back (the replica would count as healthy with its
// Down context still cancelled, and every attempt to it would abort).
func TestReadmitKeepsTheEarliestEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Static: []Spec{spec("a", "m"), spec("b", "m"), spec("c", "m"), spec("d", "m")}, Health: DefaultHealthConfig()}
		cfg.Health.ProbeInterval = 0
		cfg.Health.FailureThreshold = 1
		cfg.Health.BaseEjection, cfg.Health.MaxEjection = time.Second, time.Minute
		f, err := New(cfg, nil, nil, nil, prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		a, b := f.Snapshot().Replica("a"), f.Snapshot().Replica("b")
		b.health.ejections.Store(3) // its next ejection lasts 8s
		if !f.ReportFailure(a) {
			t.Fatal("a not ejected")
		}
		synctest.Wait()
		if !f.ReportFailure(b) {
			t.Fatal("b not ejected")
		}
		synctest.Wait()
		time.Sleep(1500 * time.Millisecond) // fake time: a's 1s ejection is over, b's 8s is not
		synctest.Wait()
		if !a.Healthy(time.Now()) {
			t.Fatal("a still ejected after its ejection")
		}
		if err := a.Down().Err(); err != nil {
			t.Errorf("a is healthy but its Down context is still cancelled: %v", context.Cause(a.Down()))
		}
		if b.Down().Err() == nil {
			t.Errorf("b's Down context renewed during its ejection")
		}
		time.Sleep(7 * time.Second)
		synctest.Wait()
		if err := b.Down().Err(); err != nil {
			t.Errorf("b is healthy again but its Down context is cancelled")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
