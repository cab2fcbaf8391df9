package render

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/bench"
)

// run is a synthetic result: a run's kind and shape, its p99 TTFT (ms) and
// hit rate, with bounds H_pool LRU 0.9 and an offline replay of 0.8.
type run struct {
	workload, kind, policy string
	load                   float64
	balancers, replicas    int
	p99, hit               float64
}

func (r run) label() string {
	switch r.kind {
	case bench.KindLoad:
		return fmt.Sprintf("%s@%gx", r.policy, r.load)
	case bench.KindBalancers:
		return fmt.Sprintf("%s-%db", r.policy, r.balancers)
	case bench.KindReplicas:
		return fmt.Sprintf("%s-%dr", r.policy, r.replicas)
	case bench.KindOracle:
		return r.policy + "-oracle"
	}
	return r.policy
}

func (r run) result() *bench.Result {
	res := &bench.Result{Config: bench.DefaultConfig(), Workload: bench.DefaultWorkload(r.workload),
		Run: bench.RunInfo{Kind: r.kind, Policy: r.policy, Balancers: r.balancers, Load: r.load, Replicas: r.replicas}}
	res.Workload.Rate = 24
	res.Config.Label, res.Config.Replicas = r.label(), r.replicas
	res.Summary.Requests = 100
	res.Summary.TTFT.N, res.Summary.TTFT.P50, res.Summary.TTFT.P99 = 100, r.p99/2, r.p99
	res.Summary.HitRateUsage, res.Summary.GoodFraction = r.hit, 1
	res.Bounds = &bench.Bounds{Replicas: r.replicas, CacheBlocks: 100, BlockSize: 16, HInf: 0.95, HPoolLRU: 0.9, HPoolBelady: 0.92, HOracle: 0.8}
	return res
}

// base, load, bal, reps and oracle build W1 runs of each kind.
func base(policy string, p99, hit float64) run {
	return run{bench.W1, bench.KindPolicy, policy, 1, 1, 4, p99, hit}
}
func load(policy string, f, p99 float64) run {
	return run{bench.W1, bench.KindLoad, policy, f, 1, 4, p99, 0.5}
}
func bal(b int, hit float64) run {
	return run{bench.W1, bench.KindBalancers, "cost_model", 1, b, 4, 50, hit}
}
func reps(policy string, n int, p99 float64) run {
	return run{bench.W1, bench.KindReplicas, policy, 1, 1, n, p99, 0.5}
}
func oracle(hit float64) run { return run{bench.W1, bench.KindOracle, "cost_model", 1, 1, 4, 40, hit} }
func w6(policy string, p99 float64) run {
	return run{bench.W6, bench.KindPolicy, policy, 1, 1, 4, p99, 0}
}

func sets(runs ...run) []Set {
	by := map[string][]*bench.Result{}
	var order []string
	for _, r := range runs {
		if _, ok := by[r.workload]; !ok {
			order = append(order, r.workload)
		}
		by[r.workload] = append(by[r.workload], r.result())
	}
	var out []Set
	for _, w := range order {
		out = append(out, Set{Workload: w, Groups: GroupResults(by[w])})
	}
	return out
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name string
		runs []run
		want []Status // ratio, oracle, H_pool, W6, balancers, replicas
		text []string // in the goals' values and reasons
	}{
		{"all met", []run{
			base("round_robin", 1000, 0.3), base("cost_model", 300, 0.88), base("least_request", 900, 0.3), oracle(0.9),
			bal(2, 0.87), bal(4, 0.86),
			reps("round_robin", 3, 5000), reps("round_robin", 5, 900), reps("cost_model", 2, 1500), reps("cost_model", 3, 600),
			w6("cost_model", 105), w6("least_request", 102),
		}, []Status{Met, Met, Met, Met, Met, Met}, []string{"0.30 (300 / 1000 ms; runs cost_model, round_robin)", "98% (0.880 / 0.900; runs cost_model, cost_model-oracle)",
			"2 / 4 = 0.50", "+2.9%"}},
		{"all missed", []run{
			base("round_robin", 1000, 0.3), base("cost_model", 600, 0.5), oracle(0.95),
			load("round_robin", 2, 1500), load("round_robin", 3, 9000), load("cost_model", 2, 700), load("cost_model", 3, 1000),
			bal(2, 0.49), bal(4, 0.3),
			reps("round_robin", 3, 5000), reps("cost_model", 2, 9000), reps("cost_model", 3, 4000),
			w6("cost_model", 200), w6("least_request", 100),
		}, []Status{Missed, Missed, Missed, Missed, Missed, Missed}, []string{
			"round_robin is within the SLO at 48 sessions/s, not at 72 sessions/s: the base rate is 33–50% of its capacity",
			"hit rate 0.500 with gossip vs 0.950 with exact state", "H_pool LRU 0.900", "4 / 4 = 1.00", "cost_model needs 4, round_robin 4 replicas"}},
		{"not measured", []run{
			base("round_robin", 1000, 0.3), base("cost_model", 300, 0.88), bal(2, 0.87),
		}, []Status{Met, NotMeasured, Met, NotMeasured, NotMeasured, NotMeasured}, []string{
			"no oracle run (bench compare --oracle); for reference, hit rate 0.880 is 110% of the offline replay's 0.800", "no W6 results",
			"no run with 4 balancers", "needs replicas sweeps"}},
		{"no size within the SLO", []run{
			base("round_robin", 3000, 0.3), base("cost_model", 2500, 0.88),
			reps("round_robin", 6, 2100), reps("cost_model", 6, 2200),
		}, []Status{Missed, NotMeasured, Met, NotMeasured, NotMeasured, NotMeasured}, []string{
			"neither is within the SLO on the sizes tried (cost_model up to 6, round_robin up to 6)", "try larger replica counts"}},
		{"round robin never within the SLO bounds the ratio", []run{
			base("round_robin", 3000, 0.3), base("cost_model", 100, 0.88),
			reps("round_robin", 6, 2100), reps("cost_model", 2, 1900),
		}, []Status{Met, NotMeasured, Met, NotMeasured, NotMeasured, Met}, []string{"2 / more than 6 ≤ 0.29"}},
		{"nothing to divide by", []run{
			base("round_robin", 0, 0), base("cost_model", 0, 0), oracle(0), bal(2, 0), bal(4, 0),
			w6("cost_model", 0), w6("least_request", 0),
		}, []Status{NotMeasured, NotMeasured, Missed, NotMeasured, NotMeasured, NotMeasured}, []string{"hit nothing", "measured no TTFT"}},
		{"no W1", []run{w6("cost_model", 100), w6("least_request", 100)},
			[]Status{NotMeasured, NotMeasured, NotMeasured, Met, NotMeasured, NotMeasured}, []string{"no W1 results", "+0.0%"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goals := Evaluate(sets(tt.runs...))
			var got []Status
			var all strings.Builder
			for _, g := range goals {
				got = append(got, g.Status)
				fmt.Fprintf(&all, "%s | %s | %s\n", g.Name, g.Value, g.Why)
				if g.Status == Missed && g.Why == "" {
					t.Errorf("missed goal %q says nothing about why", g.Name)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("statuses mismatch (-want +got):\n%s\n%s", diff, all.String())
			}
			for _, s := range tt.text {
				if !strings.Contains(all.String(), s) {
					t.Errorf("goals lack %q:\n%s", s, all.String())
				}
			}
		})
	}
}

// The report of one workload starts with the goals, shows the load context
// and the replicas sweep, and puts hit rates over the oracle run's.
func TestReportGoalsAndSweeps(t *testing.T) {
	dir := t.TempDir()
	var results []*bench.Result
	for _, r := range []run{
		base("round_robin", 2500, 0.3), base("cost_model", 300, 0.88), oracle(0.9),
		load("round_robin", 0.5, 1000), load("round_robin", 2, 9000), load("cost_model", 0.5, 100), load("cost_model", 2, 700),
		reps("round_robin", 3, 5000), reps("round_robin", 6, 2500), reps("cost_model", 2, 1500),
	} {
		results = append(results, r.result())
	}
	if err := Write(dir, results, ""); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	if g, p := strings.Index(s, "## Goals"), strings.Index(s, "## Policies"); g < 0 || g > p {
		t.Errorf("goals are not above the runs:\n%s", s)
	}
	for _, want := range []string{
		"| W1 p99 TTFT cost_model / round_robin at the base load ≤ 0.40 | 0.12",
		"Base rate: 24 sessions/s; round_robin is within the SLO at 12 sessions/s, not at 24 sessions/s: the base rate is 100–200% of its capacity",
		"| 0.5x | 12 | 1000 | 100 | 0.10 | yes |", "| 1x | 24 | 2500 | 300 | 0.12 | yes |", "| 2x | 48 | 9000 | 700 | 0.08 | yes |",
		"| cost_model | 100 | 0 | 150 | 300 |", "| 98% |", // % oracle of cost_model: 0.88 / 0.9
		"### round_robin", "| 6 | round_robin-6r | 2500 |", "Replicas needed: **more than the largest tried (6)**.",
		"### cost_model", "Replicas needed: **2**.", "cost_model / round_robin replicas needed: 2 / more than 6 ≤ 0.29.",
		"| offline replay | 0.800 |", "| exact-state oracle run | 0.900 |", "![p99-ttft-vs-replicas](p99-ttft-vs-replicas.png)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ChartP99Replicas)); err != nil {
		t.Errorf("no replicas chart: %v", err)
	}
}

// Several workloads: one report per workload (with its own goals) and an
// index with every goal and a headline table per workload.
func TestWriteTree(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	write := func(sub string, r run) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(in, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := r.result().WriteFile(filepath.Join(in, sub, fileNameOf(r)+"-rep0.json")); err != nil {
			t.Fatal(err)
		}
	}
	write("W1", base("round_robin", 1000, 0.3))
	write("W1", base("cost_model", 300, 0.88))
	write("W6", w6("cost_model", 110))
	write("W6", w6("least_request", 100))
	mc := base("cost_model", 500, 0.2)
	mc.workload = bench.Mooncake
	write("mooncake", mc)
	if err := os.MkdirAll(filepath.Join(in, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if HasResults(in) {
		t.Fatal("HasResults is true for a directory of subdirectories")
	}
	sets, err := ReadTree(in)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range sets {
		names = append(names, s.Workload)
	}
	if diff := cmp.Diff([]string{"W1", "W6", "mooncake"}, names); diff != "" {
		t.Errorf("workloads mismatch (-want +got):\n%s", diff)
	}
	if err := WriteTree(out, sets, "make bench"); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	idx := read(IndexFile)
	for _, want := range []string{"Reproduce: `make bench`", "| W1 p99 TTFT cost_model / round_robin at the base load ≤ 0.40 | 0.30",
		"| +10.0% (110 / 100 ms; runs cost_model, least_request) | **MISS** |", "## W1", "## W6", "## mooncake",
		"[W6/report.md](W6/report.md)", "| cost_model | 150 | 300 | 0.880 | 98% | - |"} {
		if !strings.Contains(idx, want) {
			t.Errorf("index lacks %q:\n%s", want, idx)
		}
	}
	w6md := read("W6/report.md")
	if !strings.Contains(w6md, "W6 (nothing shared)") || strings.Contains(w6md, "W1 p99 TTFT") || !strings.Contains(w6md, "](../README.md)") {
		t.Errorf("W6 report shows other workloads' goals or no link to the index:\n%s", w6md)
	}
	if mc := read("mooncake/report.md"); strings.Contains(mc, "## Goals") {
		t.Errorf("mooncake report has a goals table but no goal is measured on it:\n%s", mc)
	}
}

func fileNameOf(r run) string { return strings.NewReplacer("@", "_at_").Replace(r.label()) }

func TestReadTreeEmpty(t *testing.T) {
	if _, err := ReadTree(t.TempDir()); err == nil {
		t.Error("ReadTree of an empty directory gave no error")
	}
}

// Property: over random sweeps, replicas needed is the smallest size within
// the SLO, every smaller size is out of it, and the ratio's status agrees
// with the numbers.
func TestReplicasNeededProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	for i := range 500 {
		var runs []run
		p99 := map[string]map[int]float64{"round_robin": {}, "cost_model": {}}
		for _, p := range []string{"round_robin", "cost_model"} {
			r := base(p, 500+rng.Float64()*3000, 0.5)
			runs, p99[p][4] = append(runs, r), r.p99
			for _, n := range []int{1, 2, 3, 5, 6, 8} {
				if rng.IntN(2) == 0 {
					r := reps(p, n, 500+rng.Float64()*3000)
					runs, p99[p][n] = append(runs, r), r.p99
				}
			}
			runs = append(runs, reps(p, 9, 500+rng.Float64()*3000))
			p99[p][9] = runs[len(runs)-1].p99
		}
		groups := sets(runs...)[0].Groups
		got := map[string]needed{}
		for p, pts := range p99 {
			n, ok := replicasNeeded(groups, p)
			if !ok {
				t.Fatalf("case %d: %s has a sweep but replicasNeeded says none", i, p)
			}
			got[p] = n
			for size, v := range pts {
				if n.Found && size < n.N && v <= 2000 {
					t.Fatalf("case %d: %s needs %d but %d replicas are within the SLO (%v)", i, p, n.N, size, pts)
				}
				if !n.Found && v <= 2000 {
					t.Fatalf("case %d: %s found no size but %d is within the SLO", i, p, size)
				}
			}
			if n.Found && pts[n.N] > 2000 {
				t.Fatalf("case %d: %s needs %d, whose p99 %.0f is out of the SLO", i, p, n.N, pts[n.N])
			}
		}
		r, _ := replicasRatio(groups)
		cm, rr := got["cost_model"], got["round_robin"]
		if cm.Found && rr.Found && (r.status == Met) != (float64(cm.N)/float64(rr.N) <= 0.75) {
			t.Fatalf("case %d: ratio %d/%d has status %s", i, cm.N, rr.N, r.status)
		}
		if !cm.Found && !rr.Found && r.status != NotMeasured {
			t.Fatalf("case %d: no size within the SLO but status %s", i, r.status)
		}
	}
}
