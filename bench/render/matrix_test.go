package render

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/bench"
)

// mrun is a synthetic run of the matrix: its part, workload and shape, and
// the figures the matrix goals read.
type mrun struct {
	part, workload, kind, policy string
	load                         float64
	balancers                    int
	p50, p99, hit, goodput, pred float64
	shares                       []float64 // per replica
	unanswered                   bool      // every request failed
}

func (r mrun) label() string {
	switch r.kind {
	case bench.KindLoad:
		return fmt.Sprintf("%s@%gx", r.policy, r.load)
	case bench.KindBalancers:
		return fmt.Sprintf("%s-%db", r.policy, r.balancers)
	case bench.KindOracle:
		return r.policy + "-oracle"
	}
	return r.policy
}

func (r mrun) result() *bench.Result {
	res := &bench.Result{Config: bench.DefaultConfig(), Workload: bench.DefaultWorkload(r.workload),
		Run: bench.RunInfo{Kind: r.kind, Policy: r.policy, Balancers: r.balancers, Load: r.load, Replicas: 4}}
	res.Workload.Rate = 10
	res.Config.Label, res.Config.Replicas = r.label(), 4
	s := &res.Summary
	s.Requests = 100
	if r.unanswered { // a summary of failures: no TTFT, 0 ms quantiles
		s.Failed = s.Requests
		return res
	}
	s.TTFT.N, s.TTFT.P50, s.TTFT.P99 = s.Requests, r.p50, r.p99
	s.HitRateUsage, s.Goodput, s.GoodFraction = r.hit, r.goodput, 1
	if r.pred > 0 {
		s.Predicted, s.PredictionExact = 100, r.pred
	}
	if r.shares != nil {
		s.ReplicaShare = map[string]float64{}
		for i, v := range r.shares {
			s.ReplicaShare[fmt.Sprint("replica-", i)] = v
		}
	}
	return res
}

// failed builds a run of part w at 1× none of whose requests was answered.
func failed(w, policy string) mrun {
	r := at(w, 1, policy, 0, 0, 0, 0)
	r.unanswered = true
	return r
}

// at builds a run of part "p" (workload w) at load f with one balancer.
func at(w string, f float64, policy string, p50, p99, hit, goodput float64) mrun {
	kind := bench.KindPolicy
	if f != 1 {
		kind = bench.KindLoad
	}
	return mrun{part: w, workload: w, kind: kind, policy: policy, load: f, balancers: 1, p50: p50, p99: p99, hit: hit, goodput: goodput, pred: 0.99}
}

func many(w, policy string, b int, p99, hit float64) mrun {
	return mrun{part: w, workload: w, kind: bench.KindBalancers, policy: policy, load: 1, balancers: b, p50: p99 / 2, p99: p99, hit: hit, goodput: 10, pred: 0.99}
}

func msets(runs ...mrun) []Set {
	by := map[string][]*bench.Result{}
	work := map[string]string{}
	var order []string
	for _, r := range runs {
		if _, ok := by[r.part]; !ok {
			order = append(order, r.part)
		}
		by[r.part], work[r.part] = append(by[r.part], r.result()), r.workload
	}
	var out []Set
	for _, p := range order {
		out = append(out, Set{Part: p, Workload: work[p], Groups: GroupResults(by[p])})
	}
	return out
}

func goalText(goals []Goal) string {
	var sb strings.Builder
	for _, g := range goals {
		fmt.Fprintf(&sb, "%s | %s | %s | %s\n", g.Name, g.Value, g.Status, g.Why)
	}
	return sb.String()
}

func lossText(losses []Loss) string {
	var sb strings.Builder
	lossTable(&sb, losses)
	return sb.String()
}

func TestMatrixGoals(t *testing.T) {
	oracleW1 := mrun{part: "W1", workload: bench.W1, kind: bench.KindOracle, policy: "cost_model", load: 1, balancers: 1, p50: 20, p99: 40, hit: 0.9, goodput: 10}
	tests := []struct {
		name   string
		runs   []mrun
		want   []Status // every cell, sharing, W1, balancers
		text   []string // in the goals
		losses []string // in the losing table
	}{
		{"all pass", []mrun{
			at(bench.W1, 1, "round_robin", 100, 1000, 0.3, 10), at(bench.W1, 1, "llm_d", 30, 310, 0.8, 10), at(bench.W1, 1, "cost_model", 30, 300, 0.88, 9.95),
			oracleW1, many(bench.W1, "cost_model", 4, 320, 0.87),
			at(bench.W1, 0.5, "round_robin", 50, 500, 0.3, 5), at(bench.W1, 0.5, "cost_model", 20, 200, 0.88, 5),
			at(bench.W6, 1, "round_robin", 40, 60, 0, 10), at(bench.W6, 1, "cost_model", 41, 62, 0, 10), at(bench.W6, 1, "kv_aware", 10, 20, 0, 10),
		}, []Status{Met, Met, Met, Met}, []string{"3 of 3 cells pass", "2 of 2 sharing cells pass", "p99 0.30× round_robin (300 / 1000 ms)",
			"hit rate 98% of the oracle's (0.880 / 0.900)", "predictions 99.0% exact", "1 of 1 cells pass",
			"cells without runs of dynamo_kv, least_request, llm_d, p2c, sglang_cache_aware"}, []string{"No losing cell"}},
		{"every goal missed", []mrun{
			at(bench.W1, 1, "round_robin", 100, 500, 0.3, 10), at(bench.W1, 1, "cost_model", 60, 300, 0.5, 9), at(bench.W1, 1, "kv_aware", 20, 250, 0.9, 10),
			oracleW1, many(bench.W1, "cost_model", 4, 400, 0.4), many(bench.W1, "cost_model", 2, 900, 0.1), many(bench.W1, "round_robin", 4, 600, 0.3),
			{part: "W1", workload: bench.W1, kind: bench.KindPolicy, policy: "dynamo_kv", load: 1, balancers: 1, p50: 50, p99: 200, hit: 0.8, goodput: 10},
		}, []Status{Missed, Missed, Missed, Missed}, []string{"0 of 1 cells pass; worst W1 1×: 1.50× (300 / 200 ms, dynamo_kv)",
			"misses in W1 1× (see the losing cells)", "p99 0.60× round_robin", "hit rate 56% of the oracle's"},
			[]string{"| W1 1× | p99 vs the best rival | cost_model | 300 ms (1.50×) | dynamo_kv | 200 ms | hit rate 0.500 vs 0.800: more uncached prefill",
				"| W1 1× | goodput vs the best rival | cost_model | 9.00/s", "| W1 1× | p50 vs the lowest | cost_model | 60 ms (3.00×) | kv_aware | 20 ms |",
				"| W1 1× | W1 p99 vs round_robin |", "| W1 1× | W1 hit rate vs the oracle | cost_model | 0.500 (56%) | cost_model-oracle | 0.900 |",
				"| W1 1× cost_model ×4 balancers | p99 with many balancers | cost_model-4b | 400 ms (1.33×) | cost_model | 300 ms |",
				"| W1 1× cost_model ×4 balancers | hit rate with many balancers | cost_model-4b | 0.400 (80%)",
				"round_robin, which reads no view, ×4 in this cell: p99 1.20× its one-balancer run's (600 / 500 ms) |",
				"| W1 1× round_robin ×4 balancers | p99 with many balancers | round_robin-4b | 600 ms (1.20×) | round_robin | 500 ms | every request slower: p50 3.00×, p99 1.20× |"}},
		{"missing data is not measured", []mrun{
			at(bench.W2, 1, "cost_model", 10, 100, 0.5, 10), at(bench.W6, 1, "round_robin", 10, 100, 0, 10),
			many(bench.W2, "round_robin", 4, 100, 0.5),
		}, []Status{NotMeasured, NotMeasured, NotMeasured, NotMeasured}, []string{"W2 1× (needs cost_model and a rival)", "W2 1× (needs cost_model and another policy)",
			"no W1 cost_model run at 1×", "W2 1× round_robin ×4 balancers (no one-balancer run)"}, []string{"No losing cell"}},
		{"W1 predictions and hit rate alone", []mrun{
			at(bench.W1, 1, "round_robin", 100, 1000, 0.3, 10),
			{part: "W1", workload: bench.W1, kind: bench.KindPolicy, policy: "cost_model", load: 1, balancers: 1, p50: 30, p99: 300, hit: 0.88, goodput: 10, pred: 0.9},
			oracleW1, many(bench.W1, "cost_model", 4, 300, 0.8),
		}, []Status{Met, Met, Missed, Missed}, []string{"predictions 90.0% exact", "hit rate 98% of the oracle's"},
			[]string{"| W1 1× | W1 predictions | cost_model | 90.0% exact |", "| W1 1× cost_model ×4 balancers | hit rate with many balancers | cost_model-4b | 0.800 (91%) |"}},
		{"W1 without an oracle", []mrun{
			at(bench.W1, 1, "round_robin", 100, 1000, 0.3, 10), at(bench.W1, 1, "cost_model", 30, 300, 0.88, 10),
		}, []Status{Met, Met, NotMeasured, NotMeasured}, []string{"needs an oracle run that hits (bench compare --oracle)", "p99 0.30× round_robin"}, nil},
		{"a trace part shares prefixes, W6 does not", []mrun{
			{part: "mooncake-h100", workload: bench.Mooncake, kind: bench.KindPolicy, policy: "cost_model", load: 1, balancers: 1, p50: 300, p99: 900, hit: 0.2, goodput: 5,
				shares: []float64{0.4, 0.2, 0.2, 0.2}},
			{part: "mooncake-h100", workload: bench.Mooncake, kind: bench.KindPolicy, policy: "round_robin", load: 1, balancers: 1, p50: 100, p99: 800, hit: 0.2, goodput: 5,
				shares: []float64{0.25, 0.25, 0.25, 0.25}},
			at(bench.W6, 1, "round_robin", 50, 100, 0, 10), at(bench.W6, 1, "cost_model", 100, 102, 0, 10),
		}, []Status{Missed, Missed, NotMeasured, NotMeasured}, []string{"0 of 1 sharing cells pass", "misses in mooncake-h100 1×"},
			[]string{"| mooncake-h100 1× | p50 vs the lowest | cost_model | 300 ms (3.00×) | round_robin | 100 ms | busiest replica 40% of requests (fair 25%, round_robin 25%); every request slower: p50 3.00×, p99 1.12×"}},
		{"a rival that answered nothing is not the best", []mrun{
			failed(bench.W2, "round_robin"), at(bench.W2, 1, "llm_d", 20, 102, 0.5, 10), at(bench.W2, 1, "cost_model", 20, 100, 0.5, 10),
		}, []Status{Met, Met, NotMeasured, NotMeasured}, []string{"1 of 1 cells pass", "1 of 1 sharing cells pass"}, []string{"No losing cell"}},
		{"cost_model that answered nothing loses", []mrun{
			at(bench.W2, 1, "round_robin", 20, 100, 0.5, 10), failed(bench.W2, "cost_model"),
		}, []Status{Missed, Missed, NotMeasured, NotMeasured}, []string{"0 of 1 cells pass", "0 of 1 sharing cells pass"},
			[]string{"| W2 1× | p99 vs the best rival | cost_model | +Inf ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goals, losses := MatrixGoals(msets(tt.runs...))
			var got []Status
			for _, g := range goals {
				got = append(got, g.Status)
			}
			text, lt := goalText(goals), lossText(losses)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("statuses mismatch (-want +got):\n%s\n%s", diff, text)
			}
			for _, s := range tt.text {
				if !strings.Contains(text, s) {
					t.Errorf("goals lack %q:\n%s", s, text)
				}
			}
			for _, s := range tt.losses {
				if !strings.Contains(lt, s) {
					t.Errorf("losing table lacks %q:\n%s", s, lt)
				}
			}
			missed := 0
			for _, g := range goals {
				if g.Status == Missed {
					missed++
				}
			}
			if missed > 0 && len(losses) == 0 {
				t.Errorf("%d goals missed but no losing cell", missed)
			}
			if strings.Contains(lt, "ms (2.00×)") && !strings.Contains(lt, "-2b") {
				t.Error("the 2-balancer run was held to the 4-balancer goal")
			}
		})
	}
}

// diagnose reads the cause of a loss from the results: a tail only, a hit
// rate gap, queues on one replica from the per-request records, the
// engines' preemptions.
func TestDiagnose(t *testing.T) {
	rec := func(replica string, at, ttft time.Duration) bench.Record {
		return bench.Record{Replica: replica, Scheduled: at, TTFT: ttft, E2E: ttft + time.Second, Status: 200}
	}
	own := &Group{Label: "cost_model", Run: bench.RunInfo{Policy: "cost_model"}, Reps: []*bench.Result{{Records: []bench.Record{
		rec("a", 0, 300*time.Millisecond), rec("a", 100*time.Millisecond, 300*time.Millisecond), rec("a", 200*time.Millisecond, 300*time.Millisecond),
		rec("b", 0, 10*time.Millisecond), {Replica: "a", Scheduled: 250 * time.Millisecond, E2E: time.Second, Err: "reset"},
		{Replica: "a", Scheduled: 0, TTFT: time.Hour, Warmup: true, Status: 200},
	}}}}
	own.Reps[0].Summary.TTFT = bench.Dist{N: 4, P50: 100, P99: 900}
	own.Reps[0].Summary.HitRateUsage = 0.5
	own.Reps[0].Summary.Failed, own.Reps[0].Summary.Predicted, own.Reps[0].Summary.PredictionExact = 1, 10, 0.9
	own.Reps[0].EngineCounters = &bench.CacheCounters{Preemptions: 90}
	rival := &Group{Label: "llm_d", Run: bench.RunInfo{Policy: "llm_d"}, Reps: []*bench.Result{{EngineCounters: &bench.CacheCounters{Preemptions: 18}}}}
	rival.Reps[0].Summary.TTFT = bench.Dist{N: 4, P50: 100, P99: 300}
	rival.Reps[0].Summary.HitRateUsage = 0.8
	got := diagnose(own, rival, 2)
	for _, want := range []string{"hit rate 0.500 vs 0.800: more uncached prefill", "up to 4 requests awaiting their first token on one replica",
		"a tail only: p50 100 vs 100 ms, p99 900 vs 300 ms", "predictions 90.0% exact", "1 failed requests",
		"the engines preempted 90 sequences a run for want of KV memory (llm_d 18)"} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnose() lacks %q: %s", want, got)
		}
	}
	if got := diagnose(rival, rival, 2); got != "no cause in hit rate, balance, predictions or the load generator" {
		t.Errorf("diagnose of equal runs = %q", got)
	}
}

// A goodput gap is given in requests a run, and said to be unresolved when
// it is within twice the chance spread of two binomial means: the trace at
// 1.5x, 116 requests a run, 98.5 good against 101, is; 1,000 requests a
// run, 850 against 900, is not.
func TestGoodResolution(t *testing.T) {
	group := func(requests int, good ...float64) *Group {
		g := &Group{Label: "x"}
		for _, f := range good {
			r := &bench.Result{}
			r.Summary.Requests, r.Summary.GoodFraction = requests, f
			g.Reps = append(g.Reps, r)
		}
		return g
	}
	got := goodResolution(group(116, 102.0/116, 95.0/116), group(116, 101.0/116, 101.0/116))
	for _, want := range []string{"2.5 fewer good requests a run of 116 (one request is 0.86% of a run's goodput)", "too few requests to resolve the gap"} {
		if !strings.Contains(got, want) {
			t.Errorf("goodResolution() = %q, lacks %q", got, want)
		}
	}
	// The uncut trace: 55 of 56 good against 56 of 56, one request.
	if got := goodResolution(group(28, 27.0/28, 1), group(28, 1, 1)); !strings.Contains(got, "too few requests to resolve the gap") {
		t.Errorf("goodResolution() of one request against a rival with every request good = %q", got)
	}
	got = goodResolution(group(1000, 0.85, 0.85), group(1000, 0.9, 0.9))
	if !strings.Contains(got, "50.0 fewer good requests a run of 1000") || strings.Contains(got, "too few") {
		t.Errorf("goodResolution() of a resolved gap = %q", got)
	}
}

// The index merges every part present: two parts of one workload stay two
// parts, each with its own report, the headline compares cost_model with
// the best cache-blind and best peer runs, and a part without a peer run
// says so; the capacity the part measured is its 1×.
func TestWriteTreeParts(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	write := func(r mrun, c *bench.Capacity) {
		t.Helper()
		res := r.result()
		if r.workload == bench.Mooncake {
			res.Workload.Speedup = 2
		}
		res.Capacity = c
		if err := os.MkdirAll(filepath.Join(in, r.part), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := res.WriteFile(filepath.Join(in, r.part, strings.NewReplacer("@", "_at_").Replace(r.label())+"-rep0.json")); err != nil {
			t.Fatal(err)
		}
	}
	capa := &bench.Capacity{Policy: "round_robin", Unit: "speed-up", Rate: 2, Bracketed: true, Window: 20 * time.Second,
		Points: []bench.CapacityPoint{{Rate: 1, Requests: 50, P99: 300, Good: 1, Within: true}, {Rate: 2, Requests: 99, P99: 900, Good: 1, Within: true},
			{Rate: 3, Requests: 150, P99: 4000, Good: 0.7}}}
	for _, part := range []string{"mooncake", "mooncake-h100"} {
		for _, r := range []mrun{
			{workload: bench.Mooncake, kind: bench.KindPolicy, policy: "cost_model", load: 1, balancers: 1, p50: 100, p99: 400, hit: 0.2, goodput: 5},
			{workload: bench.Mooncake, kind: bench.KindPolicy, policy: "round_robin", load: 1, balancers: 1, p50: 120, p99: 500, hit: 0.1, goodput: 5},
			{workload: bench.Mooncake, kind: bench.KindPolicy, policy: "p2c", load: 1, balancers: 1, p50: 110, p99: 450, hit: 0.1, goodput: 5},
		} {
			r.part = part
			c := capa
			if part == "mooncake" {
				c = nil
			}
			write(r, c)
		}
	}
	write(mrun{part: "mooncake-h100", workload: bench.Mooncake, kind: bench.KindPolicy, policy: "dynamo_kv", load: 1, balancers: 1, p50: 90, p99: 600, hit: 0.2, goodput: 5}, capa)
	sets, err := ReadTree(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 || sets[0].Part != "mooncake" || sets[1].Part != "mooncake-h100" {
		t.Fatalf("parts: %+v", sets)
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
	idx, head := read(IndexFile), read(HeadlineFile)
	for _, want := range []string{
		"| [mooncake-h100](mooncake-h100/report.md) | 2 × trace speed (capacity) | inferrail | cost_model | 100 | 400 | 5.00 | 100.0 | 0.200 |",
		"|  |  | best cache-blind | p2c | 110 | 450 |", "|  |  | best peer | dynamo_kv | 90 | 600 |",
		"| [mooncake](mooncake/report.md) | 2 × trace speed | inferrail |", "|  |  | best peer | not measured |",
		"## Losing cells", "| mooncake-h100 1× | p50 vs the lowest | cost_model | 100 ms (1.11×) | dynamo_kv | 90 ms |",
		"1× = 2 × trace speed, round_robin's measured capacity (within the SLO at 2, not at 3; 20s windows)",
	} {
		if !strings.Contains(idx, want) {
			t.Errorf("index lacks %q:\n%s", want, idx)
		}
	}
	if !strings.Contains(head, "[mooncake-h100](mooncake-h100/report.md)") || !strings.Contains(head, "Matrix goals: PASS, MISS,") {
		t.Errorf("headline snippet:\n%s", head)
	}
	rep := read("mooncake-h100/report.md")
	for _, want := range []string{"## Capacity", "| 3 | repetition 0 | 150 | 0 | 0 | 4000 | 70.0 | no |", "every cell: cost_model TTFT p99",
		"### Losing cells", "| mooncake-h100 1× | p50 vs the lowest |"} {
		if !strings.Contains(rep, want) {
			t.Errorf("part report lacks %q:\n%s", want, rep)
		}
	}
}

// The README splice replaces only what lies between the markers, and
// refuses a file without them.
func TestSpliceReadme(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	orig := "# x\n\nbefore\n" + HeadlineBegin + "\nold table\n" + HeadlineEnd + "\nafter\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if err := SpliceReadme(path, "new table\n"); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	if want := "# x\n\nbefore\n" + HeadlineBegin + "\nnew table\n" + HeadlineEnd + "\nafter\n"; string(b) != want {
		t.Errorf("spliced README:\n%s\nwant:\n%s", b, want)
	}
	for _, bad := range []string{"no markers\n", HeadlineEnd + "\n" + HeadlineBegin + "\n", HeadlineBegin + HeadlineBegin + HeadlineEnd} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := SpliceReadme(path, "x"); err == nil || !strings.Contains(err.Error(), "bench-headline") {
			t.Errorf("SpliceReadme(%q) = %v, want an error naming the markers", bad, err)
		}
	}
	if err := SpliceReadme(filepath.Join(t.TempDir(), "missing.md"), "x"); err == nil {
		t.Error("SpliceReadme of a missing file gave no error")
	}
}

// Whatever the file holds, the splice either refuses it or keeps everything
// outside the markers and puts the snippet between them.
func FuzzSpliceHeadline(f *testing.F) {
	f.Add("a\n"+HeadlineBegin+"\nold\n"+HeadlineEnd+"\nb", "new\n")
	f.Add(HeadlineEnd+HeadlineBegin, "x")
	f.Add("<!-- bench-headline:begin --><!-- bench-headline:end -->", "")
	f.Fuzz(func(t *testing.T, s, snippet string) {
		out, err := spliceHeadline(s, snippet)
		if err != nil {
			return
		}
		i, j := strings.Index(s, HeadlineBegin), strings.Index(s, HeadlineEnd)
		if !strings.HasPrefix(out, s[:i+len(HeadlineBegin)]+"\n"+snippet) || !strings.HasSuffix(out, s[j:]) {
			t.Fatalf("splice of %q with %q = %q", s, snippet, out)
		}
	})
}

// What 1× is: a bracketed capacity, one not reached, one below the lowest
// rate tried, or the configured rate.
func TestBaseLoad(t *testing.T) {
	g := func(c *bench.Capacity) []*Group {
		r := at(bench.W6, 1, "round_robin", 1, 2, 0, 1).result()
		r.Capacity = c
		return GroupResults([]*bench.Result{r})
	}
	pts := []bench.CapacityPoint{{Rate: 5, Within: true}, {Rate: 10}}
	for _, tt := range []struct {
		c    *bench.Capacity
		want string
	}{
		{nil, "1× = 10 sessions/s as configured (no capacity search)"},
		{&bench.Capacity{Policy: "round_robin", Rate: 5, Bracketed: true, Window: time.Second, Points: pts}, "1× = 5 sessions/s, round_robin's measured capacity (within the SLO at 5, not at 10; 1s windows)"},
		{&bench.Capacity{Policy: "round_robin", Rate: 5, Bracketed: true, Window: time.Second, Points: []bench.CapacityPoint{
			{Rate: 5, Within: true}, {Rate: 10, Within: true}, {Rate: 15}, {Rate: 10, Repetition: 1}, {Rate: 5, Repetition: 1, Within: true}}},
			"1× = 5 sessions/s, round_robin's measured capacity (within the SLO at 5 on the arrivals of 2 repetitions, not at 10; 1s windows)"},
		{&bench.Capacity{Policy: "round_robin", Rate: 10, Window: time.Second, Points: []bench.CapacityPoint{{Rate: 10, Within: true}}}, "stayed within the SLO at every tried rate"},
		{&bench.Capacity{Policy: "round_robin", Rate: 10, Bracketed: true, Exceeded: true, Window: time.Second, Points: []bench.CapacityPoint{{Rate: 10}}}, "the lowest tried rate: round_robin was beyond the SLO already there"},
		{&bench.Capacity{Policy: "round_robin", Rate: 10, Bracketed: true, Exceeded: true, Window: time.Second, Points: []bench.CapacityPoint{
			{Rate: 10, Within: true}, {Rate: 15}, {Rate: 10, Repetition: 1}}},
			"the lowest tried rate: round_robin was beyond the SLO there on the arrivals of repetition 1 (within on repetition 0's), so its capacity is below it"},
	} {
		if got := baseLoad(g(tt.c)); !strings.Contains(got, tt.want) {
			t.Errorf("baseLoad() = %q, want %q", got, tt.want)
		}
	}
}

// A run whose slowest requests were all sent within a second, on most
// replicas, is diagnosed as a stall of the whole fleet; the same slow
// requests spread over the run, or on one replica, are not.
func TestFleetStall(t *testing.T) {
	build := func(slowAt func(i int) (time.Duration, string)) []bench.Record {
		var recs []bench.Record
		for i := range 600 {
			recs = append(recs, bench.Record{Replica: fmt.Sprintf("r%d", i%4), Scheduled: time.Duration(i) * 50 * time.Millisecond,
				TTFT: 30 * time.Millisecond, Status: 200})
		}
		for i := range 6 {
			at, rep := slowAt(i)
			recs = append(recs, bench.Record{Replica: rep, Scheduled: at, TTFT: time.Second, Status: 200})
		}
		return recs
	}
	burst := build(func(i int) (time.Duration, string) {
		return 20*time.Second + time.Duration(i)*100*time.Millisecond, fmt.Sprintf("r%d", i%3)
	})
	st, ok := fleetStall(burst)
	if !ok || st.requests != 6 || st.of != 6 || st.replicas != 3 || st.span != 500*time.Millisecond {
		t.Errorf("burst on 3 replicas: %+v %v, want 6 requests on 3 replicas within 500ms", st, ok)
	}
	spread := build(func(i int) (time.Duration, string) {
		return time.Duration(i) * 5 * time.Second, fmt.Sprintf("r%d", i%3)
	})
	if st, ok := fleetStall(spread); ok {
		t.Errorf("slow requests spread over the run: %+v, want no stall", st)
	}
	one := build(func(i int) (time.Duration, string) {
		return 20*time.Second + time.Duration(i)*100*time.Millisecond, "r1"
	})
	if st, ok := fleetStall(one); ok {
		t.Errorf("a queue on one replica: %+v, want no stall", st)
	}
}
