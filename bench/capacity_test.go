package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/devfleet"
)

// A rate is within the capacity when p99 TTFT is within the SLO's TTFT and
// at least 99% of requests meet the SLO; the capacity is the highest rate
// within before the first one beyond.
func TestCapacityFrom(t *testing.T) {
	slo := SLO{TTFT: 2 * time.Second, TPOT: 100 * time.Millisecond}
	sum := func(p99, good float64) Summary {
		s := Summary{Requests: 100, GoodFraction: good}
		s.TTFT.P99 = p99
		return s
	}
	if !WithinSLO(sum(2000, 0.99), slo) || WithinSLO(sum(2001, 1), slo) || WithinSLO(sum(100, 0.98), slo) || WithinSLO(Summary{}, slo) {
		t.Error("WithinSLO does not apply p99 TTFT ≤ SLO and ≥ 99% good")
	}
	pt := func(rate, p99, good float64) CapacityPoint { return NewCapacityPoint(rate, sum(p99, good), slo) }
	rep := func(p CapacityPoint, r int) CapacityPoint { p.Repetition = r; return p }
	tests := []struct {
		name                string
		points              []CapacityPoint
		rate                float64
		bracketed, exceeded bool
	}{
		{"bracketed", []CapacityPoint{pt(2, 100, 1), pt(4, 900, 1), pt(6, 2500, 0.9)}, 4, true, false},
		{"goodput decides", []CapacityPoint{pt(2, 100, 1), pt(4, 900, 0.95)}, 2, true, false},
		{"never beyond", []CapacityPoint{pt(2, 100, 1), pt(4, 200, 1)}, 4, false, false},
		{"beyond at once", []CapacityPoint{pt(2, 3000, 0.5)}, 2, true, true},
		{"nothing tried", nil, 0, false, false},
		{"a confirmation beyond steps down", []CapacityPoint{pt(2, 100, 1), pt(4, 900, 1), pt(6, 2500, 0.9), rep(pt(4, 2100, 0.98), 1), rep(pt(2, 300, 1), 1)}, 2, true, false},
		{"every confirmation beyond", []CapacityPoint{pt(2, 100, 1), pt(4, 900, 1), rep(pt(4, 2100, 1), 1), rep(pt(2, 2400, 0.9), 1)}, 2, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rate, bracketed, exceeded := capacityFrom(tt.points)
			if rate != tt.rate || bracketed != tt.bracketed || exceeded != tt.exceeded {
				t.Errorf("capacityFrom() = %v, %v, %v; want %v, %v, %v", rate, bracketed, exceeded, tt.rate, tt.bracketed, tt.exceeded)
			}
		})
	}
}

// The search climbs on the first repetition's arrivals until a rate is
// beyond, then confirms the highest rate within on every other
// repetition's, stepping down while a confirmation is beyond; nothing is
// confirmed when the lowest rate is beyond or the matrix has one repetition.
func TestClimb(t *testing.T) {
	var plans []plan
	for _, r := range []float64{2, 4, 6, 8} {
		plans = append(plans, plan{info: RunInfo{Kind: KindCapacity, Load: r}})
	}
	type run struct {
		rate float64
		rep  int
	}
	tests := []struct {
		name   string
		reps   int
		beyond []run // the runs beyond the SLO
		want   []run // the runs made, in order
	}{
		{"confirmed at once", 3, []run{{6, 0}},
			[]run{{2, 0}, {4, 0}, {6, 0}, {4, 1}, {4, 2}}},
		{"a confirmation beyond steps down", 2, []run{{8, 0}, {6, 1}},
			[]run{{2, 0}, {4, 0}, {6, 0}, {8, 0}, {6, 1}, {4, 1}}},
		{"the last repetition beyond", 3, []run{{6, 0}, {4, 2}},
			[]run{{2, 0}, {4, 0}, {6, 0}, {4, 1}, {4, 2}, {2, 1}, {2, 2}}},
		{"beyond at the lowest", 2, []run{{2, 0}}, []run{{2, 0}}},
		{"every confirmation beyond", 2, []run{{6, 0}, {4, 1}, {2, 1}},
			[]run{{2, 0}, {4, 0}, {6, 0}, {4, 1}, {2, 1}}},
		{"one repetition", 1, []run{{8, 0}}, []run{{2, 0}, {4, 0}, {6, 0}, {8, 0}}},
		{"never beyond", 2, nil, []run{{2, 0}, {4, 0}, {6, 0}, {8, 0}, {8, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []run
			var points []CapacityPoint
			err := climb(t.Context(), plans, tt.reps, func(p plan, rep int) (CapacityPoint, error) {
				r := run{p.info.Load, rep}
				got = append(got, r)
				pt := CapacityPoint{Rate: r.rate, Repetition: rep, Within: !slices.Contains(tt.beyond, r)}
				points = append(points, pt)
				return pt, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("runs %v, want %v", got, tt.want)
			}
			// The capacity the points give is a rate within on every
			// repetition's arrivals (or the lowest, beyond).
			rate, _, exceeded := capacityFrom(points)
			for _, p := range points {
				if p.Rate == rate && !p.Within && !exceeded {
					t.Errorf("capacity %v has a run beyond: %+v", rate, p)
				}
			}
		})
	}
	failing := errors.New("fleet did not start")
	err := climb(t.Context(), plans, 2, func(plan, int) (CapacityPoint, error) { return CapacityPoint{}, failing })
	if !errors.Is(err, failing) {
		t.Errorf("climb() = %v, want the run's error", err)
	}
}

// A load multiple scales the arrival rate, or a trace's speed-up.
func TestAtLoad(t *testing.T) {
	w := DefaultWorkload(W1)
	w.Rate = 10
	if got := w.AtLoad(1.5); got.Rate != 15 || got.Speedup != w.Speedup {
		t.Errorf("W1 at 1.5x: rate %v speed-up %v, want 15 and %v", got.Rate, got.Speedup, w.Speedup)
	}
	m := DefaultWorkload(Mooncake)
	m.Speedup = 2
	if got := m.AtLoad(0.5); got.Speedup != 1 || got.Rate != m.Rate {
		t.Errorf("mooncake at 0.5x: speed-up %v rate %v, want 1 and %v", got.Speedup, got.Rate, m.Rate)
	}
	if got := m.withRate(3); got.Speedup != 3 || m.unit() != "speed-up" || w.unit() != "sessions/s" {
		t.Errorf("withRate(3) on a trace gave speed-up %v (units %q, %q)", got.Speedup, m.unit(), w.unit())
	}
}

// The best peer is the peer policy with the lowest p99 TTFT in the first
// repetition's base runs; other policies, sweeps and later repetitions do
// not count.
func TestBestPeer(t *testing.T) {
	res := func(kind, policy string, rep int, p99, goodput float64) *Result {
		r := &Result{Repetition: rep, Run: RunInfo{Kind: kind, Policy: policy}}
		r.Summary.TTFT.P99, r.Summary.Goodput = p99, goodput
		return r
	}
	peers := []string{"sglang_cache_aware", "dynamo_kv", "llm_d"}
	results := []*Result{
		res(KindPolicy, "cost_model", 0, 10, 1), res(KindPolicy, "sglang_cache_aware", 0, 300, 1),
		res(KindPolicy, "dynamo_kv", 0, 200, 1), res(KindPolicy, "llm_d", 0, 200, 2),
		res(KindLoad, "sglang_cache_aware", 0, 1, 9), res(KindPolicy, "sglang_cache_aware", 1, 1, 9),
	}
	if got := BestPeer(results, peers); got != "llm_d" {
		t.Errorf("BestPeer() = %q, want llm_d (ties broken by goodput)", got)
	}
	if got := BestPeer(results[:1], peers); got != "" {
		t.Errorf("BestPeer() without peer runs = %q, want none", got)
	}
}

// The matrix of one part: every policy at 1x, round_robin, the best peer and
// cost_model at 0.5x and 1.5x and with 4 balancers; best_peer is left out
// when no peer ran, and never doubles a listed policy.
func TestMatrixPlans(t *testing.T) {
	fleet := devfleet.DefaultConfig()
	fleet.Replicas, fleet.Balancers = 4, 1
	cc := CompareConfig{
		Policies:    []string{"round_robin", "cost_model", "llm_d"},
		LoadFactors: []float64{0.5, 1.5}, LoadPolicies: []string{"round_robin", BestPeerToken, "cost_model"},
		BalancerCounts: []int{4}, BalancerPolicies: []string{"round_robin", BestPeerToken, "cost_model"},
		PeerPolicies: []string{"llm_d"}, Fleet: fleet,
	}
	labels := func(ps []plan) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.label)
		}
		return strings.Join(out, " ")
	}
	want := "round_robin cost_model llm_d round_robin@0.5x llm_d@0.5x cost_model@0.5x round_robin@1.5x llm_d@1.5x cost_model@1.5x " +
		"round_robin-4b llm_d-4b cost_model-4b"
	if got := labels(plans(cc, "llm_d")); got != want {
		t.Errorf("plans with llm_d best:\n got %s\nwant %s", got, want)
	}
	want = "round_robin cost_model llm_d round_robin@0.5x cost_model@0.5x round_robin@1.5x cost_model@1.5x round_robin-4b cost_model-4b"
	if got := labels(plans(cc, "")); got != want {
		t.Errorf("plans without a peer:\n got %s\nwant %s", got, want)
	}
	if got := labels(plans(cc, "cost_model")); strings.Count(got, "cost_model@0.5x") != 1 {
		t.Errorf("a best peer already listed is planned twice: %s", got)
	}
	cc.Capacity = CapacitySearch{Rates: []float64{8, 4, 4, 12}, Duration: 20 * time.Second, Drain: 10 * time.Second}
	want = "round_robin-capacity@4 round_robin-capacity@8 round_robin-capacity@12"
	if got := labels(capacityPlans(cc)); got != want {
		t.Errorf("capacity plans:\n got %s\nwant %s", got, want)
	}
	cc.Repetitions = 2
	cc.Workload.Duration, cc.Bench.Drain = 30*time.Second, 20*time.Second
	b := PlanBudget(cc)
	if want := (Budget{CapacityRuns: 4, Runs: 24, CapacityRun: 35 * time.Second, Run: 55 * time.Second, Total: 4*35*time.Second + 24*55*time.Second}); b != want {
		t.Errorf("PlanBudget() = %+v, want %+v", b, want)
	}
	var sb strings.Builder
	if err := WritePlan(&sb, cc); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"best_peer@0.5x", "round_robin-capacity@12", "round_robin-capacity@confirmed-rep1", "budget: 4 capacity runs", "= 24m20s"} {
		if !strings.Contains(sb.String(), s) {
			t.Errorf("the plan lacks %q:\n%s", s, sb.String())
		}
	}
	cc.DryRun = true
	if _, err := Compare(t.Context(), cc, nil); err == nil {
		t.Error("Compare ran a dry run")
	}
}
