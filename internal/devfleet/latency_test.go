package devfleet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferrail/inferrail/balancer"
	"github.com/inferrail/inferrail/balancer/route"
)

// mustBalancerYAML is balancerYAML for a test.
func mustBalancerYAML(t *testing.T, cfg Config, i, port, admin, gport int, seed string) string {
	t.Helper()
	doc, err := balancerYAML(cfg, i, port, admin, gport, seed)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestParseSimLatency(t *testing.T) {
	c, err := ParseSimLatency("step_overhead=2ms, linear_tok_per_sec=15667,attention_per_pair_ns=2.62,kv_read_per_token_ns=120,request_overhead=15ms,weight_floor=7ms,step_token_budget=4096")
	if err != nil {
		t.Fatal(err)
	}
	want := route.DefaultCostConfig()
	want.StepOverhead, want.LinearTokPerSec, want.AttentionPerPairNS = 2*time.Millisecond, 15667, 2.62
	want.KVReadPerTokenNS, want.RequestOverhead, want.WeightFloor, want.StepTokenBudget = 120, 15*time.Millisecond, 7*time.Millisecond, 4096
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("ParseSimLatency (-want +got):\n%s", diff)
	}
	if c, err := ParseSimLatency(""); err != nil || c != route.DefaultCostConfig() {
		t.Errorf("empty spec: %+v, %v; want the defaults", c, err)
	}
	_, err = ParseSimLatency("step_overhead=fast,miss_penalty=2,linear_tok_per_sec=0,nokey")
	for _, want := range []string{`step_overhead: "fast" is not a duration`, `unknown key "miss_penalty"`, `"nokey" is not key=value`, "cost_model.linear_tok_per_sec must be > 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}

func FuzzParseSimLatency(f *testing.F) {
	f.Add("step_overhead=2ms,linear_tok_per_sec=15667")
	f.Add("=,==,step_token_budget=-1")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseSimLatency(s)
		if err != nil {
			return
		}
		if args := SimLatencyArgs(c); len(args) != 2*len(simLatencyKeys) {
			t.Fatalf("%d sim args", len(args))
		}
	})
}

// SimLatency becomes the simulator's flags, with the units `inferrail sim`
// takes (A_kv in µs).
func TestSimLatencyArgs(t *testing.T) {
	c := route.DefaultCostConfig()
	c.KVReadPerTokenNS = 120
	c.StepOverhead = 2 * time.Millisecond
	args := SimLatencyArgs(c)
	for _, want := range [][2]string{{"--kv-read-us-per-token", "0.12"}, {"--step-overhead", "2ms"}, {"--max-num-batched-tokens", "8192"}} {
		i := slices.Index(args, want[0])
		if i < 0 || args[i+1] != want[1] {
			t.Errorf("args %v lack %s %s", args, want[0], want[1])
		}
	}
}

// Routing reaches the model's routing config exactly (its cost_model and
// top-level keys alike), with the overlay setting over it and the policy
// and seed left to the fleet's top-level routing.
func TestBalancerYAMLRouting(t *testing.T) {
	rc := route.DefaultConfig()
	rc.Cost.LinearTokPerSec, rc.Cost.StepOverhead, rc.Cost.AttentionPerPairNS = 15700, 1990*time.Microsecond, 3.065
	rc.SpreadMargin, rc.TieMargin = 0.5, 0.07
	rc.Policy, rc.Seed = route.PolicyRoundRobin, 99 // not written: the fleet's Policy and Seed are
	cfg := DefaultConfig()
	cfg.Routing = &rc
	cfg.OverlayTTL = time.Second
	path := filepath.Join(t.TempDir(), "b.yaml")
	if err := os.WriteFile(path, []byte(mustBalancerYAML(t, cfg, 0, 18080, 19090, 17946, "127.0.0.1:7000")), 0o644); err != nil {
		t.Fatal(err)
	}
	bc, err := balancer.LoadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := bc.Validate(); err != nil {
		t.Fatal(err)
	}
	want := rc
	want.Overlay.TTL = time.Second
	if diff := cmp.Diff(want, bc.Models[0].Routing, cmpopts.IgnoreFields(route.Config{}, "Policy", "Seed")); diff != "" {
		t.Errorf("routing (-want +got):\n%s", diff)
	}
	if p := bc.Models[0].Routing.Policy; p != "" {
		t.Errorf("the model names policy %q; want the fleet's default_policy (%s)", p, cfg.Policy)
	}
	if bc.Routing.DefaultPolicy != cfg.Policy || bc.Routing.Seed != cfg.Seed {
		t.Errorf("routing default_policy %q seed %d, want the fleet's %q and %d", bc.Routing.DefaultPolicy, bc.Routing.Seed, cfg.Policy, cfg.Seed)
	}
	bad := rc
	bad.Cost.LinearTokPerSec, bad.SpreadMargin = 0, -1
	cfg.Routing = &bad
	err = cfg.Validate()
	for _, want := range []string{"routing: ", "cost_model.linear_tok_per_sec", "spread_margin"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q named", err, want)
		}
	}
}

// RoutingKeys spells a routing block as its config file does (what bench
// results record): the YAML keys, durations as strings, no policy or seed.
func TestRoutingKeys(t *testing.T) {
	rc := route.DefaultConfig()
	rc.SpreadMargin, rc.Cost.HotPrefixQueueWait = 0.5, 250*time.Millisecond
	m, err := RoutingKeys(rc)
	if err != nil {
		t.Fatal(err)
	}
	if m["spread_margin"] != 0.5 {
		t.Errorf("spread_margin = %v, want 0.5", m["spread_margin"])
	}
	if cm, _ := m["cost_model"].(map[string]any); cm == nil || cm["hot_prefix_queue_wait"] != "250ms" {
		t.Errorf("cost_model = %v, want hot_prefix_queue_wait 250ms", m["cost_model"])
	}
	for _, k := range []string{"policy", "seed"} {
		if _, ok := m[k]; ok {
			t.Errorf("the keys hold %s", k)
		}
	}
}
