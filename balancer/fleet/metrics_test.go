package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// seriesOf returns the label sets of the registry's per-replica counters
// that name replica.
func seriesOf(t *testing.T, g prometheus.Gatherer, replica string) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "replica" && l.GetValue() == replica {
					out = append(out, mf.GetName())
				}
			}
		}
	}
	return out
}

// TestSeriesLeaveWithTheReplica: a replica removed from the fleet takes its
// ejection and probe-failure series with it, and a failure reported for it
// afterwards (a request or probe that outlived it) does not bring them back.
func TestSeriesLeaveWithTheReplica(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := Config{Static: []Spec{spec("a", "m"), spec("b", "m"), spec("c", "m")}, Health: DefaultHealthConfig(),
		Now: func() time.Time { return time.Unix(1_000_000, 0) }}
	cfg.Health.FailureThreshold = 1
	f, err := New(cfg, nil, nil, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	a := f.Snapshot().Replica("a")
	if !f.ReportFailure(a) {
		t.Fatal("a was not ejected")
	}
	f.probeResult(a, errors.New("refused"))
	if got := strings.Join(seriesOf(t, reg, "a"), " "); !strings.Contains(got, "inferrail_balancer_ejections_total") ||
		!strings.Contains(got, "inferrail_balancer_probe_failures_total") {
		t.Fatalf("a's series before it left: %s", got)
	}
	if err := f.SetStatic([]Spec{spec("b", "m"), spec("c", "m")}); err != nil {
		t.Fatal(err)
	}
	if got := seriesOf(t, reg, "a"); len(got) != 0 {
		t.Fatalf("series of a after it left: %v", got)
	}
	f.ReportFailure(a)
	f.probeResult(a, errors.New("refused"))
	if got := seriesOf(t, reg, "a"); len(got) != 0 {
		t.Fatalf("series of a after late failures: %v", got)
	}
	b := f.Snapshot().Replica("b")
	f.probeResult(b, errors.New("refused"))
	if got := seriesOf(t, reg, "b"); len(got) == 0 {
		t.Fatal("a current replica's probe failure was not counted")
	}
}
