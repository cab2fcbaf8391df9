package devfleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/bench"
	"github.com/inferrail/inferrail/internal/devfleet"
)

// Each peer baseline routes a real fleet end to end, the way `bench compare
// --policies` runs it: a cold fleet of the real binary (2 simulators, 2
// sidecars, 1 balancer) with the baseline as the balancers' policy serves a
// short W1 run with every request completing, naming its replica, and the
// balancer's decision metric showing the baseline's own reasons.
func TestBaselinesRouteAFleet(t *testing.T) {
	bin := buildBinary(t)
	want := map[string][]string{
		route.PolicySGLangCacheAware: {string(route.ReasonSGLangCacheHit), string(route.ReasonSGLangCacheMiss)},
		route.PolicyDynamoKV:         {string(route.ReasonDynamoLowestCost)},
		route.PolicyLLMD:             {string(route.ReasonLLMDMaxScore)},
	}
	for _, policy := range route.Baselines {
		t.Run(policy, func(t *testing.T) {
			res, f := runShortW1(t, bin, policy, true)
			for _, r := range res.Records {
				if r.Replica == "" {
					t.Fatalf("request %d: no x-inferrail-replica", r.Session)
				}
			}
			if res.Summary.HitRateUsage <= 0 {
				t.Errorf("hit rate %v: two shared system prompts must hit under a cache-aware baseline", res.Summary.HitRateUsage)
			}
			body := get(t, f.Balancers[0].Admin+"/metrics")
			for _, reason := range want[policy] {
				if !strings.Contains(body, `reason="`+reason+`"`) {
					t.Errorf("balancer metrics show no decision with reason %q:\n%s", reason, grepLines(body, "route_decisions_total"))
				}
			}
		})
	}
}

// runShortW1 starts a cold fleet of the real binary (2 simulators, with
// their latency model unless zeroLatency, 2 sidecars, 1 balancer with the
// policy), runs 16 W1 sessions against it the way `bench compare` does
// (the engines' counters and timings read), checks that every request
// completed and returns the result and the fleet, which stops at cleanup.
func runShortW1(t *testing.T, bin, policy string, zeroLatency bool) (*bench.Result, *devfleet.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	t.Cleanup(cancel)
	cfg := devfleet.DefaultConfig()
	cfg.Binary, cfg.Replicas, cfg.Balancers, cfg.Port = bin, 2, 1, 0
	cfg.ZeroLatency, cfg.CacheBlocks, cfg.Policy = zeroLatency, 2000, policy
	cfg.LogDir = t.TempDir()
	f := startFleet(t, ctx, cfg)
	bc := bench.DefaultConfig()
	bc.Warmup, bc.Targets = 0, []string{f.Balancers[0].URL}
	bc.EngineMetrics = f.EngineMetricsURLs()
	bc.CacheBlocks = cfg.CacheBlocks
	wl := bench.DefaultWorkload(bench.W1)
	wl.Groups, wl.SystemTokens, wl.Rate, wl.MaxSessions, wl.Duration = 2, 256, 20, 16, 0
	res, err := bench.RunWorkload(ctx, bc, wl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Summary; s.Requests != 16 || s.Failed != 0 {
		t.Fatalf("%d requests, %d failed; want 16 and 0", s.Requests, s.Failed)
	}
	return res, f
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
