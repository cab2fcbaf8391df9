package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/bench"
	"github.com/inferrail/inferrail/internal/devfleet"
)

// Workload flags start from the named workload's defaults and override only
// what was given.
func TestWorkloadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want func() bench.WorkloadConfig
	}{
		{"defaults", nil, func() bench.WorkloadConfig { return bench.DefaultWorkload(bench.W1) }},
		{"W2 overrides", []string{"--workload", "W2", "--rate", "2.5", "--turns", "3", "--think", "2s", "--seed", "9"}, func() bench.WorkloadConfig {
			c := bench.DefaultWorkload(bench.W2)
			c.Rate, c.Turns, c.Think, c.Seed = 2.5, 3, 2*time.Second, 9
			return c
		}},
		{"trace", []string{"--workload", "mooncake", "--trace", "t.jsonl", "--speedup", "4", "--max-input-tokens", "1000"}, func() bench.WorkloadConfig {
			c := bench.DefaultWorkload(bench.Mooncake)
			c.TracePath, c.Speedup, c.MaxInputTokens = "t.jsonl", 4, 1000
			return c
		}},
		{"exact times", []string{"--workload", "mooncake", "--trace", "t.jsonl", "--exact-times"}, func() bench.WorkloadConfig {
			c := bench.DefaultWorkload(bench.Mooncake)
			c.TracePath, c.ExactTimes = "t.jsonl", true
			return c
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			apply := workloadFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := apply()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want(), got); diff != "" {
				t.Errorf("workload mismatch (-want +got):\n%s", diff)
			}
		})
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	apply := workloadFlags(fs)
	_ = fs.Parse([]string{"--duration", "soon"})
	if _, err := apply(); err == nil || !strings.Contains(err.Error(), "--duration") {
		t.Errorf("a bad duration gave %v, want an error naming --duration", err)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	apply = workloadFlags(fs)
	_ = fs.Parse([]string{"--exact-times=maybe"})
	if _, err := apply(); err == nil || !strings.Contains(err.Error(), "--exact-times") {
		t.Errorf("--exact-times=maybe gave %v, want an error naming --exact-times", err)
	}
}

func TestBenchUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"bench"}, &out, &errb); code != 2 {
		t.Errorf("inferrail bench exited %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "run|compare|report") {
		t.Errorf("usage lacks the subcommands: %q", errb.String())
	}
	if code := runMain(context.Background(), []string{"bench", "frobnicate"}, &out, &errb); code != 2 {
		t.Errorf("unknown subcommand exited %d, want 2", code)
	}
}

// bench compare's flags fill the comparison's plan: oracle, sweeps and their
// policies; bad lists are rejected with the flag's name.
func TestParseCompare(t *testing.T) {
	cc, report, err := parseCompare([]string{"--policies", "round_robin,cost_model", "--oracle", "--balancer-policy", "kv_aware",
		"--replica-counts", "2,3,5,6", "--replica-policies", "round_robin,cost_model", "--load-factors", "0.5,2", "--load-policies", "round_robin",
		"--balancer-counts", "2,4", "--replicas", "4", "--out", "o", "--report", ""}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Policies, LoadPolicies, ReplicaPolicies []string
		LoadFactors                             []float64
		BalancerCounts, ReplicaCounts           []int
		Oracle                                  bool
		BalancerPolicy, OutDir, Report          string
		Replicas                                int
	}
	got := view{cc.Policies, cc.LoadPolicies, cc.ReplicaPolicies, cc.LoadFactors, cc.BalancerCounts, cc.ReplicaCounts,
		cc.OracleRun, cc.BalancerPolicy, cc.OutDir, report, cc.Fleet.Replicas}
	want := view{[]string{"round_robin", "cost_model"}, []string{"round_robin"}, []string{"round_robin", "cost_model"}, []float64{0.5, 2},
		[]int{2, 4}, []int{2, 3, 5, 6}, true, "kv_aware", "o", "", 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseCompare mismatch (-want +got):\n%s", diff)
	}
	cc, _, err = parseCompare([]string{"--policies", "sglang_cache_aware,dynamo_kv,llm_d", "--balancer-policy", "llm_d"}, io.Discard)
	if err != nil || !slices.Equal(cc.Policies, route.Baselines) || cc.BalancerPolicy != "llm_d" {
		t.Errorf("baselines: policies %v balancer policy %q, err %v; want the three baselines", cc.Policies, cc.BalancerPolicy, err)
	}
	cc, _, err = parseCompare([]string{"--policies", "cost_model,cost_model+text"}, io.Discard)
	if err != nil || !slices.Equal(cc.Policies, []string{"cost_model", "cost_model+text"}) {
		t.Errorf("+text: policies %v, err %v; want cost_model and cost_model+text", cc.Policies, err)
	}
	cc, _, err = parseCompare(nil, io.Discard)
	if err != nil || cc.OracleRun || len(cc.ReplicaCounts) != 0 || len(cc.Policies) != 7 {
		t.Errorf("defaults: oracle %v, replica counts %v, %d policies, err %v; want no oracle, no sweep, 7 policies", cc.OracleRun, cc.ReplicaCounts, len(cc.Policies), err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--replica-counts", "2,x", "--replica-policies", "round_robin"}, "--replica-counts"},
		{[]string{"--replica-counts", "0", "--replica-policies", "round_robin"}, "--replica-counts"},
		{[]string{"--replica-counts", "2,3"}, "--replica-policies"},
		{[]string{"--replica-policies", "cost_model"}, "--replica-counts"},
		{[]string{"--balancer-counts", "-1"}, "--balancer-counts"},
		{[]string{"--load-factors", "0"}, "--load-factors"},
		{[]string{"--policies", "round_robin,sglang"}, `--policies: "sglang" is not a policy`},
		{[]string{"--policies", "fastest+text"}, `--policies: "fastest+text" is not a policy`},
		{[]string{"--load-factors", "2", "--load-policies", "dynamo"}, "--load-policies"},
		{[]string{"--balancer-policy", "llmd"}, "--balancer-policy"},
		{[]string{"--capacity-rates", "4,2"}, "--capacity-rates"},
		{[]string{"--capacity-rates", "0"}, "--capacity-rates"},
	} {
		if _, _, err := parseCompare(tt.args, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseCompare(%q) = %v, want an error naming %s", tt.args, err, tt.want)
		}
	}
}

// bench report renders one report per workload and an index when the
// results directory holds one subdirectory per workload.
func TestBenchReportTree(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	for _, w := range []string{bench.W1, bench.W6} {
		for _, p := range []string{"round_robin", "least_request", "cost_model"} {
			r := &bench.Result{Config: bench.DefaultConfig(), Workload: bench.DefaultWorkload(w), Run: bench.RunInfo{Kind: bench.KindPolicy, Policy: p, Balancers: 1, Load: 1}}
			r.Config.Label, r.Config.Replicas = p, 4
			r.Records = []bench.Record{{Status: 200, TTFT: 100 * time.Millisecond, E2E: time.Second, CompletionTokens: 2, PromptTokens: 64, CachedTokens: 32, CachedReported: true}}
			r.Summary = bench.Summarize(r.Records, r.Config.SLO)
			if err := os.MkdirAll(filepath.Join(in, w), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteFile(filepath.Join(in, w, p+"-rep0.json")); err != nil {
				t.Fatal(err)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"bench", "report", "--results", in, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench report exited %d: %s", code, stderr.String())
	}
	for _, f := range []string{"README.md", "W1/report.md", "W6/report.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("report lacks %s: %v", f, err)
		}
	}
	idx, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(idx), "## W6") || !strings.Contains(string(idx), "within 5% of least_request's | +0.0%") {
		t.Errorf("index lacks the W6 section or its goal:\n%s", idx)
	}
}

// The matrix flags: sweep and peer policies as lists, the capacity search
// and the dry run.
func TestParseCompareMatrix(t *testing.T) {
	cc, _, err := parseCompare([]string{"--policies", "round_robin,llm_d,cost_model", "--peer-policies", "llm_d,dynamo_kv",
		"--balancer-policies", "round_robin,best_peer,cost_model", "--capacity-rates", "2,4,8", "--capacity-duration", "15s",
		"--capacity-drain", "5s", "--capacity-warmup", "3s", "--dry-run", "--workload", "ladder"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := bench.CapacitySearch{Policy: "round_robin", Rates: []float64{2, 4, 8}, Duration: 15 * time.Second, Warmup: 3 * time.Second, Drain: 5 * time.Second}
	if diff := cmp.Diff(want, cc.Capacity); diff != "" {
		t.Errorf("capacity search mismatch (-want +got):\n%s", diff)
	}
	if !cc.DryRun || cc.Workload.Name != bench.Ladder || !cmp.Equal(cc.PeerPolicies, []string{"llm_d", "dynamo_kv"}) ||
		!cmp.Equal(cc.BalancerPolicies, []string{"round_robin", "best_peer", "cost_model"}) {
		t.Errorf("dry run %v, workload %s, peers %v, balancer policies %v", cc.DryRun, cc.Workload.Name, cc.PeerPolicies, cc.BalancerPolicies)
	}
	var out bytes.Buffer
	if code := runMain(context.Background(), []string{"bench", "compare", "--dry-run", "--policies", "round_robin,cost_model",
		"--capacity-rates", "2,4", "--repetitions", "2", "--out", t.TempDir()}, &out, io.Discard); code != 0 {
		t.Fatalf("bench compare --dry-run exited %d: %s", code, out.String())
	}
	for _, s := range []string{"round_robin-capacity@4", "cost_model", "round_robin-capacity@confirmed-rep1", "budget: 3 capacity runs", "4 runs (2 repetitions)"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the dry run's plan lacks %q:\n%s", s, out.String())
		}
	}
}

// --sim-latency and --cost-model reach the fleet: the simulators' constants
// and the balancers' cost_model; bad values name the flag.
func TestParseCompareLatencyFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cost.yaml")
	if err := os.WriteFile(file, []byte("cost_model:\n  linear_tok_per_sec: 15700\n  step_overhead: 2ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cc, _, err := parseCompare([]string{"--sim-latency", "linear_tok_per_sec=15667,step_overhead=2ms", "--cost-model", file}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Fleet.SimLatency == nil || cc.Fleet.SimLatency.LinearTokPerSec != 15667 || cc.Fleet.SimLatency.StepOverhead != 2*time.Millisecond {
		t.Errorf("sim latency %+v", cc.Fleet.SimLatency)
	}
	if r := cc.Fleet.Routing; r == nil || r.Cost.LinearTokPerSec != 15700 || r.Cost.AttentionPerPairNS != 1.31 || r.SpreadMargin != route.DefaultConfig().SpreadMargin {
		t.Errorf("routing %+v, want the cost model file over the defaults", r)
	}
	if cc, _, _ := parseCompare(nil, io.Discard); cc.Fleet.SimLatency != nil || cc.Fleet.Routing != nil {
		t.Error("without the flags the fleet still gets a latency model or cost model")
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("cost_model:\n  linear_tok_per_s: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--sim-latency", "warp=9"}, `--sim-latency: sim latency "warp=9": unknown key "warp"`},
		{[]string{"--cost-model", bad}, "cost_model.linear_tok_per_s"},
		{[]string{"--cost-model", filepath.Join(t.TempDir(), "none.yaml")}, "--cost-model: open"},
	} {
		if _, _, err := parseCompare(tt.args, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseCompare(%v) = %v, want an error with %q", tt.args, err, tt.want)
		}
	}
}

// --routing reaches the fleet's balancers: its keys over the defaults, with
// --cost-model's block over its cost_model; policy and seed (set by
// --policies and --seed), unknown keys and bad values are refused, naming
// the flag and the key.
func TestParseCompareRoutingFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	routing := write("routing.yaml", "spread_margin: 0.5\ncost_model:\n  miss_penalty: 0.25\n")
	cost := write("cost.yaml", "cost_model:\n  linear_tok_per_sec: 15700\n")
	cc, _, err := parseCompare([]string{"--routing", routing}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := route.DefaultConfig()
	want.SpreadMargin, want.Cost.MissPenalty = 0.5, 0.25
	if diff := cmp.Diff(&want, cc.Fleet.Routing); diff != "" {
		t.Errorf("--routing (-want +got):\n%s", diff)
	}
	if cc, _, err = parseCompare([]string{"--routing", routing, "--cost-model", cost}, io.Discard); err != nil {
		t.Fatal(err)
	}
	want.Cost = route.DefaultCostConfig()
	want.Cost.LinearTokPerSec = 15700
	if diff := cmp.Diff(&want, cc.Fleet.Routing); diff != "" {
		t.Errorf("--routing with --cost-model (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ body, want string }{
		{"policy: round_robin\n", "policy is set by --policies and --seed"},
		{"seed: 7\n", "seed is set by --policies and --seed"},
		{"spread_margn: 0.5\n", "spread_margn"},
		{"spread_margin: 1.5\n", "spread_margin must be in [0, 1), got 1.5"},
		{"spread_margin: [\n", "--routing"},
	} {
		path := write("bad.yaml", tt.body)
		if _, _, err := parseCompare([]string{"--routing", path}, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) ||
			!strings.Contains(err.Error(), "--routing "+path) {
			t.Errorf("--routing with %q: %v, want an error naming the file and %q", tt.body, err, tt.want)
		}
	}
}

// bench report --readme writes the headline between a README's markers,
// with links under --out, and refuses a single-directory layout.
func TestBenchReportReadme(t *testing.T) {
	dir := t.TempDir()
	in, out, readme := filepath.Join(dir, "results"), filepath.Join(dir, "report"), filepath.Join(dir, "README.md")
	if err := os.MkdirAll(filepath.Join(in, "W1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"round_robin", "cost_model"} {
		r := &bench.Result{Config: bench.DefaultConfig(), Workload: bench.DefaultWorkload(bench.W1), Run: bench.RunInfo{Kind: bench.KindPolicy, Policy: p, Balancers: 1, Load: 1, Replicas: 4}}
		r.Config.Label, r.Config.Replicas = p, 4
		r.Summary.Requests, r.Summary.TTFT.P50, r.Summary.TTFT.P99 = 10, 20, 40
		if err := r.WriteFile(filepath.Join(in, "W1", p+"-rep0.json")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(readme, []byte("# x\n<!-- bench-headline:begin -->\n<!-- bench-headline:end -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"bench", "report", "--results", in, "--out", out, "--readme", readme}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench report exited %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(readme)
	if !strings.Contains(string(b), "| ["+"W1]("+filepath.ToSlash(out)+"/W1/report.md) |") || !strings.HasPrefix(string(b), "# x\n") {
		t.Errorf("README after the splice:\n%s", b)
	}
	if code := runMain(context.Background(), []string{"bench", "report", "--results", filepath.Join(in, "W1"), "--out", out, "--readme", readme}, &stdout, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "not one directory per part") {
		t.Errorf("--readme on a single directory: exit %d, %s", code, stderr.String())
	}
}

// The flags devfleet derives from --sim-latency are flags `inferrail sim`
// accepts, with values it takes.
func TestSimLatencyArgsAreSimFlags(t *testing.T) {
	c, err := devfleet.ParseSimLatency("step_overhead=2ms,weight_floor=10.3ms,linear_tok_per_sec=15000,attention_per_pair_ns=2.6,kv_read_per_token_ns=90,request_overhead=12ms,step_token_budget=2048")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // parse the flags, start and stop at once
	var errb bytes.Buffer
	args := append([]string{"--port", "0", "--log-level", "error"}, devfleet.SimLatencyArgs(c)...)
	if err := runSim(ctx, args, io.Discard, &errb); err != nil {
		t.Errorf("inferrail sim %v: %v\n%s", args, err, errb.String())
	}
}
