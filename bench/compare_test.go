package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/devfleet"
)

// plans lists every run once, with its kind, label and fleet shape, and
// leaves out sweep points that the base runs already are.
func TestPlans(t *testing.T) {
	fleet := devfleet.DefaultConfig()
	fleet.Replicas, fleet.Balancers = 4, 1
	tests := []struct {
		name string
		cc   CompareConfig
		want []plan
	}{
		{"policies only", CompareConfig{Policies: []string{"round_robin", "cost_model"}, Fleet: fleet}, []plan{
			{RunInfo{KindPolicy, "round_robin", 1, 1, 4}, "round_robin"},
			{RunInfo{KindPolicy, "cost_model", 1, 1, 4}, "cost_model"},
		}},
		{"everything", CompareConfig{
			Policies: []string{"round_robin", "cost_model"}, Nginx: []string{"least_conn"},
			OracleRun: true, BalancerPolicy: "cost_model",
			LoadFactors: []float64{0.5, 1, 2}, LoadPolicies: []string{"round_robin"},
			BalancerCounts: []int{1, 2}, ReplicaCounts: []int{3, 4, 6}, ReplicaPolicies: []string{"round_robin", "cost_model"},
			Fleet: fleet,
		}, []plan{
			{RunInfo{KindPolicy, "round_robin", 1, 1, 4}, "round_robin"},
			{RunInfo{KindPolicy, "cost_model", 1, 1, 4}, "cost_model"},
			{RunInfo{KindBaseline, "nginx-least_conn", 0, 1, 4}, "nginx-least_conn"},
			{RunInfo{KindOracle, "cost_model", 1, 1, 4}, "cost_model-oracle"},
			{RunInfo{KindLoad, "round_robin", 1, 0.5, 4}, "round_robin@0.5x"},
			{RunInfo{KindLoad, "round_robin", 1, 2, 4}, "round_robin@2x"},
			{RunInfo{KindBalancers, "cost_model", 2, 1, 4}, "cost_model-2b"},
			{RunInfo{KindReplicas, "round_robin", 1, 1, 3}, "round_robin-3r"},
			{RunInfo{KindReplicas, "round_robin", 1, 1, 6}, "round_robin-6r"},
			{RunInfo{KindReplicas, "cost_model", 1, 1, 3}, "cost_model-3r"},
			{RunInfo{KindReplicas, "cost_model", 1, 1, 6}, "cost_model-6r"},
		}},
		{"oracle defaults to cost_model", CompareConfig{OracleRun: true, Fleet: fleet}, []plan{
			{RunInfo{KindOracle, "cost_model", 1, 1, 4}, "cost_model-oracle"},
		}},
		{"replicas point of a policy without a base run", CompareConfig{Policies: []string{"cost_model"},
			ReplicaCounts: []int{4, 5}, ReplicaPolicies: []string{"least_request"}, Fleet: fleet}, []plan{
			{RunInfo{KindPolicy, "cost_model", 1, 1, 4}, "cost_model"},
			{RunInfo{KindReplicas, "least_request", 1, 1, 4}, "least_request-4r"},
			{RunInfo{KindReplicas, "least_request", 1, 1, 5}, "least_request-5r"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plans(tt.cc, "")
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(plan{})); diff != "" {
				t.Errorf("plans() mismatch (-want +got):\n%s", diff)
			}
			seen := map[string]bool{}
			for _, p := range got {
				if seen[fileName(p.label)] {
					t.Errorf("two runs write %s", fileName(p.label))
				}
				seen[fileName(p.label)] = true
			}
		})
	}
}

// Odd repetitions run the plans in reverse, so drift of the machine over a
// part does not always favour the same runs; even ones keep the order.
func TestRepetitionOrder(t *testing.T) {
	ps := []plan{{label: "a"}, {label: "b"}, {label: "c"}}
	labels := func(ps []plan) (out []string) {
		for _, p := range ps {
			out = append(out, p.label)
		}
		return out
	}
	for rep, want := range [][]string{{"a", "b", "c"}, {"c", "b", "a"}, {"a", "b", "c"}} {
		if got := labels(repetitionOrder(ps, rep)); !slices.Equal(got, want) {
			t.Errorf("repetition %d runs %v, want %v", rep, got, want)
		}
	}
	if got := labels(ps); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("repetitionOrder changed its input: %v", got)
	}
}

func TestSplitPolicyTextPrefix(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		text, known  bool
	}{
		{"cost_model", "cost_model", false, true},
		{"cost_model+text", "cost_model", true, true},
		{"sglang_cache_aware+text", "sglang_cache_aware", true, true},
		{"nope+text", "nope", true, false},
		{"cost_model+tex", "cost_model+tex", false, false},
	} {
		p, text := SplitPolicy(tc.name)
		if p != tc.policy || text != tc.text || KnownPolicy(tc.name) != tc.known {
			t.Errorf("%s: SplitPolicy = %q, %v, KnownPolicy = %v; want %q, %v, %v", tc.name, p, text, KnownPolicy(tc.name), tc.policy, tc.text, tc.known)
		}
	}
}

// TestWithObjective: the fleet's routing is told the SLO the runs are judged
// by, unless a routing config states its own, and only cost_model keeps the
// TPOT objective (the others read none).
func TestWithObjective(t *testing.T) {
	slo := SLO{TTFT: 2 * time.Second, TPOT: 100 * time.Millisecond}
	fc := withObjective(devfleet.Config{Policy: route.PolicyCostModel}, slo)
	if fc.Routing == nil || fc.Routing.SLO != (route.SLOConfig{TTFT: 2 * time.Second, TPOT: 100 * time.Millisecond}) {
		t.Fatalf("no routing config: got %+v, want the bench's SLO", fc.Routing)
	}
	if got := fc.RouteConfig().SpreadMargin; got != route.DefaultConfig().SpreadMargin {
		t.Errorf("spread margin %v, want the default", got)
	}
	fc.Policy = route.PolicyRoundRobin
	if got := fc.RouteConfig().SLO.TPOT; got != 0 {
		t.Errorf("round_robin's TPOT objective %v, want 0", got)
	}
	own := route.DefaultConfig()
	own.SpreadMargin, own.SLO = 0.25, route.SLOConfig{TPOT: 50 * time.Millisecond}
	fc = withObjective(devfleet.Config{Policy: route.PolicyCostModel, Routing: &own}, slo)
	if fc.Routing.SLO != own.SLO || fc.Routing.SpreadMargin != 0.25 {
		t.Errorf("a routing config with an slo: got %+v, want it kept", fc.Routing)
	}
	other := route.DefaultConfig()
	other.SpreadMargin = 0.25
	fc = withObjective(devfleet.Config{Policy: route.PolicyCostModel, Routing: &other}, slo)
	if fc.Routing.SLO.TPOT != 100*time.Millisecond || fc.Routing.SpreadMargin != 0.25 || other.SLO.TPOT != 0 {
		t.Errorf("a routing config without an slo: got %+v (the caller's now %+v), want its keys and the bench's SLO, the caller's config untouched", fc.Routing, other.SLO)
	}
}
