package render

import (
	"fmt"
	"strings"

	"github.com/inferrail/inferrail/bench"
)

// verdictPolicy is the policy whose wins and losses the index spells out.
const verdictPolicy = "cost_model"

// verdictMargin is how much better, relatively, a rival must be to count as
// beating verdictPolicy: closer figures are a tie within noise.
const verdictMargin = 0.02

// verdict writes, for one workload, where verdictPolicy wins and where it
// loses against the other runs at the base load (the policies and the
// external baselines; the oracle is a reference, not a competitor): TTFT
// p50 and p99 (lower wins) and the hit rate (higher wins; left out when no
// run hits), a rival counting only when it is better by more than
// verdictMargin. Nothing is written without a verdictPolicy run or a rival.
func verdict(sb *strings.Builder, groups []*Group) {
	var own *Group
	var rivals []*Group
	for _, g := range groups {
		switch {
		case !isBase(g) || g.Run.Kind == bench.KindOracle:
		case g.Run.Policy == verdictPolicy && g.Run.Kind != bench.KindBaseline:
			own = g
		default:
			rivals = append(rivals, g)
		}
	}
	if own == nil || len(rivals) == 0 {
		return
	}
	type metric struct {
		name   string
		format string
		value  func(*Group) float64
		higher bool
	}
	metrics := []metric{
		{"TTFT p50", "%.0f ms", (*Group).p50, false},
		{"TTFT p99", "%.0f ms", (*Group).p99, false},
		{"hit rate", "%.3f", (*Group).hit, true},
	}
	var parts []string
	for _, m := range metrics {
		v := m.value(own)
		if m.higher && v == 0 {
			continue // nothing shared: hit rates say nothing
		}
		var ahead []string
		for _, r := range rivals {
			if rv := m.value(r); m.higher && rv > v*(1+verdictMargin) || !m.higher && rv < v*(1-verdictMargin) {
				ahead = append(ahead, fmt.Sprintf("%s "+m.format, r.Label, rv))
			}
		}
		verb := fmt.Sprintf("no run better by more than %.0f%%", 100*verdictMargin)
		if len(ahead) > 0 {
			verb = "loses to " + strings.Join(ahead, ", ")
		}
		parts = append(parts, fmt.Sprintf("%s "+m.format+": %s", m.name, v, verb))
	}
	if len(parts) == 0 {
		return
	}
	fmt.Fprintf(sb, "\nWhere %s wins and loses at the base load: %s.\n", verdictPolicy, strings.Join(parts, "; "))
}
