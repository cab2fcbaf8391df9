package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// picksSection writes, for each run whose balancers estimate (cost_model),
// the rules that picked its requests' replicas (bench.Record.RouteReason):
// how many requests each picked, what its picks were estimated above the
// lowest candidate's estimate (bench.Record.LowestEstimatedTTFT), and the
// TTFTs its requests got. A rule that buys its requests a later first
// token for nothing shows here: the hot-prefix rule's memory move on the
// Mooncake trace, whose single requests never came back for the contexts
// it kept (docs/routing.md). Runs from before the balancer named its rules
// have none, and then no section is written.
func picksSection(sb *strings.Builder, groups []*Group) {
	var rows []string
	for _, g := range groups {
		for _, p := range rulePicks(g) {
			rows = append(rows, fmt.Sprintf("| %s | %s | %d (%.1f%%) | %.1f | %.0f | %.0f | %.0f |",
				g.Label, p.rule, p.n, 100*p.share, p.aboveMean, p.aboveMax, p.ttft.P50, p.ttft.P99))
		}
	}
	if len(rows) == 0 {
		return
	}
	sb.WriteString("\n## The rules that picked the replicas\n\n" +
		"For each run whose balancers estimate TTFTs, its measured answered requests by the rule that picked their replica (the balancer's " +
		"`Server-Timing`, as its decision log names it): how far the pick's estimated TTFT was above the lowest candidate's (what the rule paid " +
		"by the estimate, ms) and the TTFTs those requests got (ms). Over every repetition.\n\n")
	sb.WriteString("| run | rule | requests | above the lowest, mean | above, max | TTFT p50 | TTFT p99 |\n|---|---|---|---|---|---|---|\n")
	sb.WriteString(strings.Join(rows, "\n") + "\n")
}

// rulePick is one rule's share of a run's picks (rulePicks).
type rulePick struct {
	rule                string
	n                   int
	share               float64
	aboveMean, aboveMax float64 // ms
	ttft                bench.Dist
}

// rulePicks returns g's measured answered requests by the rule that picked
// their replica, the most frequent first (then by name); nil unless every
// such request names its rule and has the lowest estimate beside its own.
func rulePicks(g *Group) []rulePick {
	by := map[string][]*bench.Record{}
	total := 0
	for _, r := range g.Reps {
		for i := range r.Records {
			rec := &r.Records[i]
			if rec.Warmup || !rec.OK() {
				continue
			}
			if rec.RouteReason == "" || rec.EstimatedTTFT <= 0 || rec.LowestEstimatedTTFT <= 0 {
				return nil
			}
			by[rec.RouteReason] = append(by[rec.RouteReason], rec)
			total++
		}
	}
	var picks []rulePick
	for rule, recs := range by {
		p := rulePick{rule: rule, n: len(recs), share: float64(len(recs)) / float64(total)}
		ttfts := make([]time.Duration, len(recs))
		for i, rec := range recs {
			above := float64(max(rec.EstimatedTTFT-rec.LowestEstimatedTTFT, 0)) / float64(time.Millisecond)
			p.aboveMean += above / float64(len(recs))
			p.aboveMax = max(p.aboveMax, above)
			ttfts[i] = rec.TTFT
		}
		p.ttft = bench.NewDist(ttfts)
		picks = append(picks, p)
	}
	slices.SortFunc(picks, func(a, b rulePick) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.rule, b.rule)) })
	return picks
}
