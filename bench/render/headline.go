package render

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/inferrail/inferrail/bench"
)

// HeadlineFile is the generated headline snippet, with links relative to the
// report's directory it sits in; the root README gets the same snippet with
// links from the root (SpliceReadme).
const HeadlineFile = "headline.md"

// capacityOfSet returns the measured capacity the part's results record
// (nil without a capacity search).
func capacityOfSet(groups []*Group) *bench.Capacity {
	for _, g := range groups {
		for _, r := range g.Reps {
			if r.Capacity != nil {
				return r.Capacity
			}
		}
	}
	return nil
}

// baseLoadValue is the part's 1× load: the arrival rate, or a trace's
// speed-up, and its unit.
func baseLoadValue(groups []*Group) (float64, string) {
	wl := groups[0].Reps[0].Workload
	if wl.Name == bench.Mooncake {
		return wl.Speedup, "× trace speed"
	}
	return wl.Rate, "sessions/s"
}

// baseLoad says what 1× is for the part: round robin's measured capacity
// (with the bracket) or the configured rate.
func baseLoad(groups []*Group) string {
	v, unit := baseLoadValue(groups)
	c := capacityOfSet(groups)
	if c == nil {
		return fmt.Sprintf("1× = %.3g %s as configured (no capacity search)", v, unit)
	}
	var beyond float64 // the lowest rate above the capacity with a run beyond
	for _, p := range c.Points {
		if !p.Within && p.Rate > c.Rate && (beyond == 0 || p.Rate < beyond) {
			beyond = p.Rate
		}
	}
	if c.Exceeded {
		var within, beyondReps []string // repetitions' arrivals at the lowest rate
		for _, p := range c.Points {
			if p.Rate != c.Rate {
				continue
			}
			if p.Within {
				within = append(within, strconv.Itoa(p.Repetition))
			} else {
				beyondReps = append(beyondReps, strconv.Itoa(p.Repetition))
			}
		}
		there := "already there"
		if len(within) > 0 {
			there = fmt.Sprintf("there on the arrivals of repetition %s (within on repetition %s's)", strings.Join(beyondReps, ", "), strings.Join(within, ", "))
		}
		return fmt.Sprintf("1× = %.3g %s, the lowest tried rate: %s was beyond the SLO %s, so its capacity is below it (%v windows)", c.Rate, unit, c.Policy, there, c.Window)
	}
	if !c.Bracketed || beyond == 0 {
		return fmt.Sprintf("1× = %.3g %s: %s stayed within the SLO at every tried rate (its capacity is at least that; %v windows)", c.Rate, unit, c.Policy, c.Window)
	}
	runs := 0 // the runs at the capacity, one per repetition's arrivals
	for _, p := range c.Points {
		if p.Rate == c.Rate {
			runs++
		}
	}
	at := fmt.Sprintf("%.3g", c.Rate)
	if runs > 1 {
		at += fmt.Sprintf(" on the arrivals of %d repetitions", runs)
	}
	return fmt.Sprintf("1× = %.3g %s, %s's measured capacity (within the SLO at %s, not at %.3g; %v windows)", c.Rate, unit, c.Policy, at, beyond, c.Window)
}

// capacitySection writes the capacity search's points.
func capacitySection(sb *strings.Builder, groups []*Group) {
	c := capacityOfSet(groups)
	if c == nil {
		return
	}
	_, unit := baseLoadValue(groups)
	fmt.Fprintf(sb, "## Capacity\n\n%s at stepped rates, %v arrival windows; a rate is within its capacity when TTFT p99 is within the SLO's TTFT and at least %.0f%% of requests meet the SLO, on the first repetition's arrivals and then, for the highest rate within, on every other repetition's (a rate beyond there steps the search down). %s.\n\n",
		c.Policy, c.Window, 100*bench.CapacityGoodShare, strings.TrimPrefix(baseLoad(groups), ""))
	fmt.Fprintf(sb, "| %s | arrivals of | requests | failed | TTFT p50 ms | TTFT p99 ms | good %% | within |\n|---|---|---|---|---|---|---|---|\n", unit)
	for _, p := range c.Points {
		yes := "no"
		if p.Within {
			yes = "yes"
		}
		fmt.Fprintf(sb, "| %.3g | repetition %d | %d | %d | %.0f | %.0f | %.1f | %s |\n", p.Rate, p.Repetition, p.Requests, p.Failed, p.P50, p.P99, 100*p.Good, yes)
	}
	sb.WriteString("\n")
}

// headlineMatrix writes, per part at 1×, cost_model against the best
// cache-blind balancer and the best peer policy (each the lowest TTFT p99
// of its kind): TTFT p50 and p99, goodput and hit rate. linkPrefix goes
// before each part's report link ("" from the index).
func headlineMatrix(sb *strings.Builder, sets []Set, linkPrefix string) {
	sb.WriteString("Each part at 1× of its base load: cost_model against the best cache-blind balancer and the best peer policy there (the lowest TTFT p99 of each kind).\n\n")
	sb.WriteString("| part | 1× load | kind | run | TTFT p50 ms | TTFT p99 ms | goodput/s | good % | hit rate |\n|---|---|---|---|---|---|---|---|---|\n")
	cells := cellsOf(sets)
	for _, s := range sets {
		var c *cell
		for _, x := range cells {
			if x.part == s.partName() && x.load == 1 {
				c = x
				break
			}
		}
		if c == nil {
			continue
		}
		v, unit := baseLoadValue(s.Groups)
		load := fmt.Sprintf("%.3g %s", v, unit)
		switch c := capacityOfSet(s.Groups); {
		case c == nil:
		case c.Exceeded:
			load += " (above capacity)"
		case c.Bracketed:
			load += " (capacity)"
		default:
			load += " (capacity not reached)"
		}
		part := fmt.Sprintf("[%s](%s%s/%s)", s.partName(), linkPrefix, dirName(s.partName()), ReportFile)
		for _, row := range []struct {
			kind string
			g    *Group
		}{
			{"inferrail", c.run(ownPolicy)},
			{"best cache-blind", c.best(cacheBlind, (*Group).p99)},
			{"best peer", c.best(peerPolicies, (*Group).p99)},
		} {
			if row.g == nil {
				fmt.Fprintf(sb, "| %s | %s | %s | not measured | - | - | - | - | - |\n", part, load, row.kind)
			} else {
				fmt.Fprintf(sb, "| %s | %s | %s | %s | %.0f | %.0f | %.2f | %.1f | %.3f |\n", part, load, row.kind, row.g.Label,
					row.g.p50(), row.g.p99(), row.g.goodput(), 100*row.g.good(), row.g.hit())
			}
			part, load = "", ""
		}
	}
}

// HeadlineSnippet is the headline table as a markdown snippet for the root
// README, with links under linkPrefix (e.g. "bench/report/"), and the
// matrix goals' statuses in one line.
func HeadlineSnippet(sets []Set, linkPrefix string) string {
	var sb strings.Builder
	sb.WriteString("<!-- generated by `inferrail bench report` from bench/results; do not edit -->\n")
	headlineMatrix(&sb, sets, linkPrefix)
	goals, losses := MatrixGoals(sets)
	var st []string
	for _, g := range goals {
		st = append(st, string(g.Status))
	}
	fmt.Fprintf(&sb, "\nMatrix goals: %s; %d losing cells ([goals and losing cells](%s%s)).\n", strings.Join(st, ", "), len(losses), linkPrefix, IndexFile)
	return sb.String()
}

// Markers around the generated headline in a README (SpliceReadme).
const (
	HeadlineBegin = "<!-- bench-headline:begin -->"
	HeadlineEnd   = "<!-- bench-headline:end -->"
)

// SpliceReadme replaces the text between HeadlineBegin and HeadlineEnd in
// the file at path with snippet (see spliceHeadline).
func SpliceReadme(path, snippet string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	out, err := spliceHeadline(string(b), snippet)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// spliceHeadline replaces what lies between the markers of s with snippet;
// s must hold each marker once, HeadlineBegin first.
func spliceHeadline(s, snippet string) (string, error) {
	i, j := strings.Index(s, HeadlineBegin), strings.Index(s, HeadlineEnd)
	if i < 0 || j < i+len(HeadlineBegin) || strings.Count(s, HeadlineBegin) != 1 || strings.Count(s, HeadlineEnd) != 1 {
		return "", fmt.Errorf("needs one %s line before one %s line", HeadlineBegin, HeadlineEnd)
	}
	return s[:i+len(HeadlineBegin)] + "\n" + snippet + s[j:], nil
}
