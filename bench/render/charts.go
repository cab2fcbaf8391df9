package render

import (
	"cmp"
	"slices"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// The four charts of a report, built from grouped results; each reports
// false when the results hold nothing to draw.

func ttftCDF(groups []*Group) (LineChart, bool) {
	lc := LineChart{Title: "TTFT CDF per policy (measured requests, all repetitions)", XLabel: "TTFT (ms, log scale)", YLabel: "fraction of requests", LogX: true}
	for _, g := range groups {
		if !isBase(g) {
			continue
		}
		ts := g.ttfts()
		if len(ts) == 0 {
			continue
		}
		s := Series{Name: g.Label}
		step := max(1, len(ts)/400)
		for i := 0; i < len(ts); i += step {
			s.X = append(s.X, float64(ts[i])/float64(time.Millisecond))
			s.Y = append(s.Y, float64(i+1)/float64(len(ts)))
		}
		s.X = append(s.X, float64(ts[len(ts)-1])/float64(time.Millisecond))
		s.Y = append(s.Y, 1)
		lc.Series = append(lc.Series, s)
	}
	return lc, len(lc.Series) > 0
}

func hitRate(groups []*Group) (BarChart, bool) {
	bc := BarChart{Title: "Prefix hit rate per policy (from usage) and its bounds", YLabel: "hit rate (cached / prompt tokens)"}
	var b *bench.Bounds
	for _, g := range groups {
		if !isBase(g) {
			continue
		}
		bc.Labels = append(bc.Labels, g.Label)
		bc.Values = append(bc.Values, g.mean(func(r *bench.Result) float64 { return r.Summary.HitRateUsage }))
		if b == nil && g.Reps[0].Bounds != nil {
			b = g.Reps[0].Bounds
		}
	}
	if b != nil {
		bc.Refs = []Ref{{"H_inf", b.HInf}, {"H_pool LRU", b.HPoolLRU}, {"offline replay", b.HOracle}}
	}
	return bc, len(bc.Values) > 0
}

func p99VsLoad(groups []*Group) (LineChart, bool) {
	lc := LineChart{Title: "p99 TTFT against load", XLabel: "load (x base arrival rate)", YLabel: "p99 TTFT (ms)", Markers: true}
	byPolicy := map[string][][2]float64{}
	var order []string
	for _, g := range groups {
		if g.Run.Kind != bench.KindLoad && g.Run.Kind != bench.KindPolicy {
			continue
		}
		if g.Run.Kind == bench.KindPolicy && !hasLoadRuns(groups, g.Run.Policy) {
			continue
		}
		if _, ok := byPolicy[g.Run.Policy]; !ok {
			order = append(order, g.Run.Policy)
		}
		byPolicy[g.Run.Policy] = append(byPolicy[g.Run.Policy], [2]float64{g.Run.Load, g.p99()})
	}
	for _, p := range order {
		pts := byPolicy[p]
		slices.SortFunc(pts, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
		s := Series{Name: p}
		for _, pt := range pts {
			s.X, s.Y = append(s.X, pt[0]), append(s.Y, pt[1])
		}
		lc.Series = append(lc.Series, s)
	}
	return lc, len(lc.Series) > 0
}

func hasLoadRuns(groups []*Group, policy string) bool {
	for _, g := range groups {
		if g.Run.Kind == bench.KindLoad && g.Run.Policy == policy {
			return true
		}
	}
	return false
}

func hitVsBalancers(groups []*Group) (LineChart, bool) {
	lc := LineChart{Title: "Hit rate against number of balancers", XLabel: "balancers", YLabel: "hit rate (from usage)", Markers: true}
	var pts [][2]float64
	policy := ""
	for _, g := range groups {
		if g.Run.Kind == bench.KindBalancers {
			policy = g.Run.Policy
		}
	}
	if policy == "" {
		return lc, false
	}
	for _, g := range groups {
		if g.Run.Policy == policy && (g.Run.Kind == bench.KindBalancers || g.Run.Kind == bench.KindPolicy) {
			pts = append(pts, [2]float64{float64(g.Run.Balancers), g.mean(func(r *bench.Result) float64 { return r.Summary.HitRateUsage })})
		}
	}
	slices.SortFunc(pts, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
	s := Series{Name: policy}
	for _, pt := range pts {
		s.X, s.Y = append(s.X, pt[0]), append(s.Y, pt[1])
	}
	lc.Series = []Series{s}
	for _, g := range groups {
		if g.Run.Policy == policy && g.Reps[0].Bounds != nil {
			lc.Refs = []Ref{{"H_pool LRU", g.Reps[0].Bounds.HPoolLRU}, {"offline replay", g.Reps[0].Bounds.HOracle}}
			break
		}
	}
	if o := oracleRun(groups); o != nil {
		lc.Refs = append(lc.Refs, Ref{"exact-state oracle", o.hit()})
	}
	return lc, true
}
