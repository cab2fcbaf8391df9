package render

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// Helpers that read sweeps out of grouped results: the base run of a
// policy, the load sweep (capacity bracket, ratio per load factor) and the
// replicas sweep (replicas needed to stay within the SLO).

// p99 is the mean over answered repetitions of a group's TTFT p99, in ms
// (see latency).
func (g *Group) p99() float64 { return g.latency(func(d bench.Dist) float64 { return d.P99 }) }

// p50 is the mean over answered repetitions of a group's TTFT p50, in ms.
func (g *Group) p50() float64 { return g.latency(func(d bench.Dist) float64 { return d.P50 }) }

// latency is the mean of a TTFT quantile over the repetitions that answered
// a request. A repetition that answered none has no TTFT to average (its
// summary's 0 ms is not a latency), and a group none of whose repetitions
// answered is infinitely slow: it can never be the best rival nor meet a
// latency goal.
func (g *Group) latency(q func(bench.Dist) float64) float64 {
	var s float64
	n := 0
	for _, r := range g.Reps {
		if r.Summary.TTFT.N > 0 {
			s += q(r.Summary.TTFT)
			n++
		}
	}
	if n == 0 {
		return math.Inf(1)
	}
	return s / float64(n)
}

// hit is the mean over repetitions of a group's hit rate from usage.
func (g *Group) hit() float64 {
	return g.mean(func(r *bench.Result) float64 { return r.Summary.HitRateUsage })
}

// good is the mean share of requests within the SLO.
func (g *Group) good() float64 {
	return g.mean(func(r *bench.Result) float64 { return r.Summary.GoodFraction })
}

// replicas is the group's fleet size.
func (g *Group) replicas() int {
	if g.Run.Replicas > 0 {
		return g.Run.Replicas
	}
	return g.Reps[0].Config.Replicas
}

// bound is the mean over repetitions of a bound (0 without bounds).
func (g *Group) bound(f func(*bench.Bounds) float64) float64 {
	return g.mean(func(r *bench.Result) float64 {
		if r.Bounds == nil {
			return 0
		}
		return f(r.Bounds)
	})
}

// sloTTFT is the SLO's TTFT of the results, in ms.
func sloTTFT(groups []*Group) float64 {
	return float64(groups[0].Reps[0].Config.SLO.TTFT) / float64(time.Millisecond)
}

// baseRate is the workload's base arrival rate (sessions per second).
func baseRate(groups []*Group) float64 { return groups[0].Reps[0].Workload.Rate }

// baseRun returns the policy's run at the base load (nil if none).
func baseRun(groups []*Group, policy string) *Group {
	for _, g := range groups {
		if g.Run.Kind == bench.KindPolicy && g.Run.Policy == policy {
			return g
		}
	}
	return nil
}

// oracleRun returns the exact-state oracle run, preferring cost_model's.
func oracleRun(groups []*Group) *Group {
	var found *Group
	for _, g := range groups {
		if g.Run.Kind == bench.KindOracle && (found == nil || g.Run.Policy == "cost_model") {
			found = g
		}
	}
	return found
}

// comparableToOracle reports whether g ran the oracle run's load and fleet
// size, so its hit rate can be put over the oracle's.
func comparableToOracle(g, oracle *Group) bool {
	return oracle != nil && g.Run.Load == oracle.Run.Load && g.replicas() == oracle.replicas() &&
		g.Run.Kind != bench.KindLoad && g.Run.Kind != bench.KindReplicas
}

// point is one sweep point of a policy.
type point struct {
	x     float64 // load factor or replicas
	group *Group
}

// loadPoints returns the policy's base run and load sweep, by load; nil
// when the policy has no load sweep.
func loadPoints(groups []*Group, policy string) []point {
	var pts []point
	sweep := false
	for _, g := range groups {
		if g.Run.Policy != policy || (g.Run.Kind != bench.KindPolicy && g.Run.Kind != bench.KindLoad) {
			continue
		}
		sweep = sweep || g.Run.Kind == bench.KindLoad
		pts = append(pts, point{g.Run.Load, g})
	}
	if !sweep {
		return nil
	}
	slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.x, b.x) })
	return pts
}

// capacity is a policy's measured capacity bracket: within the SLO's TTFT at
// rate Within (0: at no tried rate below Beyond), not at Beyond (0: within
// it at every tried rate).
type capacity struct {
	Within, Beyond float64
}

// capacityOf brackets the policy's capacity from its load sweep: the lowest
// load whose p99 TTFT is above the SLO and the highest one below it within.
func capacityOf(groups []*Group, policy string) (capacity, bool) {
	pts := loadPoints(groups, policy)
	if len(pts) == 0 {
		return capacity{}, false
	}
	slo, rate := sloTTFT(groups), baseRate(groups)
	var c capacity
	for _, p := range pts {
		if p.group.p99() > slo {
			c.Beyond = p.x * rate
			break
		}
		c.Within = p.x * rate
	}
	return c, true
}

// describe says the bracket and where the base rate sits in it.
func (c capacity) describe(policy string, base float64) string {
	switch {
	case c.Beyond == 0:
		return fmt.Sprintf("%s stays within the SLO at every tried rate up to %.3g sessions/s, so its capacity is not bracketed; the base rate is at most %.0f%% of it",
			policy, c.Within, 100*base/c.Within)
	case c.Within == 0:
		return fmt.Sprintf("%s is out of the SLO already at %.3g sessions/s, the lowest tried rate", policy, c.Beyond)
	}
	return fmt.Sprintf("%s is within the SLO at %.3g sessions/s, not at %.3g sessions/s: the base rate is %.0f–%.0f%% of its capacity",
		policy, c.Within, c.Beyond, 100*base/c.Beyond, 100*base/c.Within)
}

// replicaPoints returns the policy's runs at the base load by fleet size:
// its base run and replicas sweep; nil when the policy has no sweep.
func replicaPoints(groups []*Group, policy string) []point {
	var pts []point
	sweep := false
	for _, g := range groups {
		if g.Run.Policy != policy || g.Run.Load != 1 || (g.Run.Kind != bench.KindPolicy && g.Run.Kind != bench.KindReplicas) {
			continue
		}
		sweep = sweep || g.Run.Kind == bench.KindReplicas
		pts = append(pts, point{float64(g.replicas()), g})
	}
	if !sweep {
		return nil
	}
	slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.x, b.x) })
	return pts
}

// replicaPolicies lists the policies with a replicas sweep, in report order.
func replicaPolicies(groups []*Group) []string {
	var out []string
	for _, g := range groups {
		if g.Run.Kind == bench.KindReplicas && !slices.Contains(out, g.Run.Policy) {
			out = append(out, g.Run.Policy)
		}
	}
	return out
}

// needed is the result of a replicas sweep: the fewest replicas whose p99
// TTFT is within the SLO (Found false: none of those tried, up to Largest).
type needed struct {
	N       int
	Found   bool
	Largest int
	Runs    []string
}

func replicasNeeded(groups []*Group, policy string) (needed, bool) {
	pts := replicaPoints(groups, policy)
	if len(pts) == 0 {
		return needed{}, false
	}
	slo := sloTTFT(groups)
	var n needed
	for _, p := range pts {
		n.Largest = max(n.Largest, int(p.x))
		n.Runs = append(n.Runs, p.group.Label)
		if !n.Found && p.group.p99() <= slo {
			n.N, n.Found = int(p.x), true
		}
	}
	return n, true
}

func (n needed) String() string {
	if !n.Found {
		return fmt.Sprintf("more than the largest tried (%d)", n.Largest)
	}
	return fmt.Sprint(n.N)
}

// replicasSection writes the replicas sweep: a table per policy, the
// replicas needed and the cost_model/round_robin ratio.
func replicasSection(sb *strings.Builder, groups []*Group) {
	policies := replicaPolicies(groups)
	if len(policies) == 0 {
		return
	}
	slo := sloTTFT(groups)
	fmt.Fprintf(sb, "\n## Replicas needed\n\nEach policy at the base rate (%.3g sessions/s) on fleets of several sizes, every replica with the same cache; "+
		"\"replicas needed\" is the fewest replicas whose p99 TTFT is within the SLO (%.0f ms).\n", baseRate(groups), slo)
	for _, p := range policies {
		fmt.Fprintf(sb, "\n### %s\n\n| replicas | run | TTFT p99 ms | good %% | hit rate |\n|---|---|---|---|---|\n", p)
		for _, pt := range replicaPoints(groups, p) {
			g := pt.group
			fmt.Fprintf(sb, "| %d | %s | %.0f | %.1f | %.3f |\n", int(pt.x), g.Label, g.p99(), 100*g.good(), g.hit())
		}
		n, _ := replicasNeeded(groups, p)
		fmt.Fprintf(sb, "\nReplicas needed: **%s**.\n", n)
	}
	if r, ok := replicasRatio(groups); ok {
		fmt.Fprintf(sb, "\ncost_model / round_robin replicas needed: %s.\n", r.text)
	}
}

// ratioResult is the replicas-needed ratio cost_model / round_robin.
type ratioResult struct {
	status Status
	text   string
	runs   []string
}

// replicasRatio compares the replicas cost_model and round_robin need; a
// sweep that found no size within the SLO still bounds the ratio.
func replicasRatio(groups []*Group) (ratioResult, bool) {
	cm, okc := replicasNeeded(groups, "cost_model")
	rr, okr := replicasNeeded(groups, "round_robin")
	if !okc || !okr {
		return ratioResult{}, false
	}
	res := ratioResult{runs: append(slices.Clone(cm.Runs), rr.Runs...)}
	const goal = 0.75
	switch {
	case cm.Found && rr.Found:
		r := float64(cm.N) / float64(rr.N)
		res.text = fmt.Sprintf("%d / %d = %.2f", cm.N, rr.N, r)
		res.status = statusOf(r <= goal)
	case cm.Found:
		r := float64(cm.N) / float64(rr.Largest+1)
		res.text = fmt.Sprintf("%d / more than %d ≤ %.2f", cm.N, rr.Largest, r)
		res.status = NotMeasured
		if r <= goal {
			res.status = Met
		}
	case rr.Found:
		r := float64(cm.Largest+1) / float64(rr.N)
		res.text = fmt.Sprintf("more than %d / %d ≥ %.2f", cm.Largest, rr.N, r)
		res.status = NotMeasured
		if r > goal {
			res.status = Missed
		}
	default:
		res.text = fmt.Sprintf("neither is within the SLO on the sizes tried (cost_model up to %d, round_robin up to %d)", cm.Largest, rr.Largest)
		res.status = NotMeasured
	}
	return res, true
}

// p99VsReplicas charts p99 TTFT against fleet size, with the SLO as a
// reference line.
func p99VsReplicas(groups []*Group) (LineChart, bool) {
	lc := LineChart{Title: "p99 TTFT against replicas (base rate)", XLabel: "replicas", YLabel: "p99 TTFT (ms)", Markers: true}
	for _, p := range replicaPolicies(groups) {
		s := Series{Name: p}
		for _, pt := range replicaPoints(groups, p) {
			s.X, s.Y = append(s.X, pt.x), append(s.Y, pt.group.p99())
		}
		lc.Series = append(lc.Series, s)
	}
	if len(lc.Series) == 0 {
		return lc, false
	}
	lc.Refs = []Ref{{"SLO TTFT", sloTTFT(groups)}}
	return lc, true
}
