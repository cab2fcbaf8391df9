package render

import (
	"fmt"
	"strings"

	"github.com/inferrail/inferrail/bench"
)

// Status says whether the results meet a goal.
type Status string

// Goal statuses.
const (
	Met         Status = "PASS"
	Missed      Status = "MISS"
	NotMeasured Status = "not measured"
)

func statusOf(ok bool) Status {
	if ok {
		return Met
	}
	return Missed
}

// Goal is one of the goals evaluated against the results.
type Goal struct {
	// Workload is the workload whose results measure the goal.
	Workload string
	// Name states the goal.
	Name string
	// Value is the measured value, with the runs it comes from.
	Value  string
	Status Status
	// Why gives the numbers behind a missed or unmeasured goal.
	Why string
}

// Set is the grouped results of one workload part: one directory of
// results (W1, the trace on H100-sized caches, ...).
type Set struct {
	// Part names the part (its directory; the workload when empty).
	Part string
	// Workload is the workload its results ran (W1, ladder, mooncake, ...).
	Workload string
	Groups   []*Group
}

func findSet(sets []Set, workload string) *Set {
	for i := range sets {
		if sets[i].Workload == workload && len(sets[i].Groups) > 0 {
			return &sets[i]
		}
	}
	return nil
}

// Goal thresholds, from the issue.
const (
	goalP99Ratio      = 0.40 // W1 p99 TTFT cost_model / round_robin
	goalOracleShare   = 0.95 // hit rate / exact-state oracle's
	goalPoolShare     = 0.90 // hit rate / H_pool LRU
	goalW6Slack       = 1.05 // W6 p99 TTFT cost_model / least_request
	goalBalancerShare = 0.95 // hit rate with B balancers / with one
)

// Evaluate computes the goals from the results of every workload:
// W1 for the latency ratio, the hit rates, the balancers and the replicas;
// W6 for "affinity must not hurt". A goal whose runs are missing is "not
// measured", with the runs it needs.
func Evaluate(sets []Set) []Goal {
	w1, w6 := findSet(sets, bench.W1), findSet(sets, bench.W6)
	return []Goal{goalW1Ratio(w1), goalHitOracle(w1), goalHitPool(w1), goalW6(w6), goalBalancers(w1), goalReplicas(w1)}
}

func notMeasured(g Goal, why string) Goal {
	g.Status, g.Value, g.Why = NotMeasured, "-", why
	return g
}

func goalW1Ratio(set *Set) Goal {
	g := Goal{Workload: bench.W1, Name: fmt.Sprintf("W1 p99 TTFT cost_model / round_robin at the base load ≤ %.2f", goalP99Ratio)}
	if set == nil {
		return notMeasured(g, "no W1 results")
	}
	cm, rr := baseRun(set.Groups, "cost_model"), baseRun(set.Groups, "round_robin")
	if cm == nil || rr == nil {
		return notMeasured(g, "needs the cost_model and round_robin runs at the base load")
	}
	if rr.p99() <= 0 {
		return notMeasured(g, "round_robin measured no TTFT")
	}
	r := cm.p99() / rr.p99()
	g.Value = fmt.Sprintf("%.2f (%.0f / %.0f ms; runs %s, %s)", r, cm.p99(), rr.p99(), cm.Label, rr.Label)
	g.Status = statusOf(r <= goalP99Ratio)
	if g.Status == Missed {
		g.Why = fmt.Sprintf("hit rate %.3f vs %.3f; TTFT p50 %.0f vs %.0f ms", cm.hit(), rr.hit(),
			cm.p50(), rr.p50())
		if c, ok := capacityOf(set.Groups, "round_robin"); ok {
			g.Why += "; " + c.describe("round_robin", baseRate(set.Groups))
		} else {
			g.Why += "; no round_robin load sweep, so where the base load sits against its capacity is unknown"
		}
	}
	return g
}

// hitBase returns the run whose hit rate the hit-rate goals judge: the
// oracle's policy at the base load (cost_model without an oracle run).
func hitBase(groups []*Group) *Group {
	if o := oracleRun(groups); o != nil {
		if g := baseRun(groups, o.Run.Policy); g != nil {
			return g
		}
	}
	return baseRun(groups, "cost_model")
}

func goalHitOracle(set *Set) Goal {
	g := Goal{Workload: bench.W1, Name: fmt.Sprintf("W1 hit rate ≥ %.0f%% of the exact-state oracle's", 100*goalOracleShare)}
	if set == nil {
		return notMeasured(g, "no W1 results")
	}
	base, o := hitBase(set.Groups), oracleRun(set.Groups)
	if base == nil {
		return notMeasured(g, "no cost_model run at the base load")
	}
	if o == nil {
		why := "no oracle run (bench compare --oracle)"
		if b := base.bound(func(b *bench.Bounds) float64 { return b.HOracle }); b > 0 {
			why += fmt.Sprintf("; for reference, hit rate %.3f is %s of the offline replay's %.3f", base.hit(), pct(base.hit(), b), b)
		}
		return notMeasured(g, why)
	}
	if o.hit() <= 0 {
		return notMeasured(g, fmt.Sprintf("the oracle run %s hit nothing: no shared prefix to compare", o.Label))
	}
	share := base.hit() / o.hit()
	g.Value = fmt.Sprintf("%.0f%% (%.3f / %.3f; runs %s, %s)", 100*share, base.hit(), o.hit(), base.Label, o.Label)
	g.Status = statusOf(share >= goalOracleShare)
	if g.Status == Missed {
		g.Why = fmt.Sprintf("hit rate %.3f with gossip vs %.3f with exact state; p99 TTFT %.0f vs %.0f ms", base.hit(), o.hit(), base.p99(), o.p99())
	}
	return g
}

func goalHitPool(set *Set) Goal {
	g := Goal{Workload: bench.W1, Name: fmt.Sprintf("W1 hit rate ≥ %.0f%% of H_pool (LRU)", 100*goalPoolShare)}
	if set == nil {
		return notMeasured(g, "no W1 results")
	}
	base := hitBase(set.Groups)
	if base == nil {
		return notMeasured(g, "no cost_model run at the base load")
	}
	pool := base.bound(func(b *bench.Bounds) float64 { return b.HPoolLRU })
	if pool <= 0 {
		return notMeasured(g, "the results carry no bounds")
	}
	share := base.hit() / pool
	g.Value = fmt.Sprintf("%.0f%% (%.3f / %.3f; run %s)", 100*share, base.hit(), pool, base.Label)
	g.Status = statusOf(share >= goalPoolShare)
	if g.Status == Missed {
		g.Why = fmt.Sprintf("hit rate %.3f, H_pool LRU %.3f, H_pool Belady %.3f, H_inf %.3f", base.hit(), pool,
			base.bound(func(b *bench.Bounds) float64 { return b.HPoolBelady }), base.bound(func(b *bench.Bounds) float64 { return b.HInf }))
	}
	return g
}

func goalW6(set *Set) Goal {
	g := Goal{Workload: bench.W6, Name: fmt.Sprintf("W6 (nothing shared) p99 TTFT of cost_model within %.0f%% of least_request's", 100*(goalW6Slack-1))}
	if set == nil {
		return notMeasured(g, "no W6 results")
	}
	cm, lr := baseRun(set.Groups, "cost_model"), baseRun(set.Groups, "least_request")
	if cm == nil || lr == nil {
		return notMeasured(g, "needs the cost_model and least_request runs at the base load")
	}
	if lr.p99() <= 0 {
		return notMeasured(g, "least_request measured no TTFT")
	}
	r := cm.p99() / lr.p99()
	g.Value = fmt.Sprintf("%+.1f%% (%.0f / %.0f ms; runs %s, %s)", 100*(r-1), cm.p99(), lr.p99(), cm.Label, lr.Label)
	g.Status = statusOf(r <= goalW6Slack)
	if g.Status == Missed {
		g.Why = fmt.Sprintf("TTFT p50 %.0f vs %.0f ms; replica share %s vs %s",
			cm.p50(), lr.p50(),
			shareSpread(cm), shareSpread(lr))
	}
	return g
}

func goalBalancers(set *Set) Goal {
	g := Goal{Workload: bench.W1, Name: fmt.Sprintf("W1 hit rate with 2 and 4 balancers ≥ %.0f%% of one balancer's", 100*goalBalancerShare)}
	if set == nil {
		return notMeasured(g, "no W1 results")
	}
	var one *Group
	multi := map[int]*Group{}
	for _, gr := range set.Groups {
		if gr.Run.Kind == bench.KindBalancers {
			multi[gr.Run.Balancers] = gr
		}
	}
	policy := ""
	for _, gr := range multi {
		if policy == "" || gr.Run.Policy == "cost_model" {
			policy = gr.Run.Policy
		}
	}
	for _, gr := range set.Groups {
		if gr.Run.Policy == policy && gr.Run.Balancers == 1 && (gr.Run.Kind == bench.KindPolicy || gr.Run.Kind == bench.KindBalancers) {
			one = gr
		}
	}
	if policy == "" || one == nil {
		return notMeasured(g, "needs a balancer sweep (bench compare --balancer-counts 2,4) and its policy's one-balancer run")
	}
	if one.hit() <= 0 {
		return notMeasured(g, fmt.Sprintf("the one-balancer run %s hit nothing", one.Label))
	}
	var parts, missing []string
	ok := true
	for _, b := range []int{2, 4} {
		gr := multi[b]
		if gr == nil || gr.Run.Policy != policy {
			missing = append(missing, fmt.Sprint(b))
			continue
		}
		share := gr.hit() / one.hit()
		ok = ok && share >= goalBalancerShare
		parts = append(parts, fmt.Sprintf("%d: %.0f%% (%.3f / %.3f; runs %s, %s)", b, 100*share, gr.hit(), one.hit(), gr.Label, one.Label))
	}
	g.Value = strings.Join(parts, "; ")
	switch {
	case !ok:
		g.Status = Missed
		g.Why = "a balancer sees only its own placements between summary updates: " + g.Value
	case len(missing) > 0:
		g.Status = NotMeasured
		g.Why = "no run with " + strings.Join(missing, " and ") + " balancers"
		if g.Value == "" {
			g.Value = "-"
		}
	default:
		g.Status = Met
	}
	return g
}

func goalReplicas(set *Set) Goal {
	g := Goal{Workload: bench.W1, Name: "W1 replicas needed for p99 TTFT within the SLO: cost_model ≤ 0.75× round_robin's"}
	if set == nil {
		return notMeasured(g, "no W1 results")
	}
	r, ok := replicasRatio(set.Groups)
	if !ok {
		return notMeasured(g, "needs replicas sweeps of cost_model and round_robin (bench compare --replica-counts … --replica-policies round_robin,cost_model)")
	}
	g.Value = fmt.Sprintf("%s (runs %s)", r.text, strings.Join(r.runs, ", "))
	g.Status = r.status
	if r.status != Met {
		cm, _ := replicasNeeded(set.Groups, "cost_model")
		rr, _ := replicasNeeded(set.Groups, "round_robin")
		g.Why = fmt.Sprintf("cost_model needs %s, round_robin %s replicas (SLO TTFT %.0f ms)", cm, rr, sloTTFT(set.Groups))
		if r.status == NotMeasured {
			g.Why += "; try larger replica counts"
		}
	}
	return g
}

// goalsTable writes the goals as a markdown table.
func goalsTable(sb *strings.Builder, goals []Goal) {
	sb.WriteString("| goal | measured | status | why |\n|---|---|---|---|\n")
	for _, g := range goals {
		status := string(g.Status)
		if g.Status != NotMeasured {
			status = "**" + status + "**"
		}
		why := g.Why
		if why == "" {
			why = "-"
		}
		fmt.Fprintf(sb, "| %s | %s | %s | %s |\n", g.Name, g.Value, status, why)
	}
}

// loadContext writes where the base load sits: the base rate, round robin's
// capacity bracket and the p99 ratio cost_model / round_robin at every load.
func loadContext(sb *strings.Builder, groups []*Group) {
	if len(groups) == 0 {
		return
	}
	rate := baseRate(groups)
	fmt.Fprintf(sb, "\nBase rate: %.3g sessions/s", rate)
	if c, ok := capacityOf(groups, "round_robin"); ok {
		fmt.Fprintf(sb, "; %s", c.describe("round_robin", rate))
	} else {
		sb.WriteString(" (no round_robin load sweep: its capacity is not measured)")
	}
	sb.WriteString(".\n")
	cm, rr := loadPoints(groups, "cost_model"), loadPoints(groups, "round_robin")
	if len(cm) == 0 || len(rr) == 0 {
		return
	}
	fmt.Fprintf(sb, "\n| load | sessions/s | round_robin p99 ms | cost_model p99 ms | ratio | ≤ %.2f |\n|---|---|---|---|---|---|\n", goalP99Ratio)
	for _, c := range cm {
		for _, r := range rr {
			if r.x != c.x {
				continue
			}
			ratio := c.group.p99() / r.group.p99()
			yes := "no"
			if ratio <= goalP99Ratio {
				yes = "yes"
			}
			fmt.Fprintf(sb, "| %gx | %.3g | %.0f | %.0f | %.2f | %s |\n", c.x, c.x*rate, r.group.p99(), c.group.p99(), ratio, yes)
		}
	}
}
