package render

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/inferrail/inferrail/bench"
)

// Thresholds of the matrix goals (issue 10).
const (
	goalCellP99Slack   = 1.05 // cost_model p99 / the best rival's, every cell
	goalCellGoodShare  = 0.99 // cost_model goodput / the best rival's, every cell
	goalSharingSlack   = 1.05 // cost_model p50 and p99 / the lowest, sharing cells
	goalW1VsRR         = 0.40 // W1 p99 cost_model / round_robin
	goalW1OracleShare  = 0.95 // W1 hit rate / the exact-state oracle's
	goalW1Predictions  = 0.98 // W1 share of exact predictions
	goalMultiHitShare  = 0.95 // hit rate with B balancers / with one
	goalMultiP99Slack  = 1.10 // p99 with B balancers / with one
	goalMultiBalancers = 4    // the balancer count the goal names
)

// Loss is one losing cell of a matrix goal: what lost to what, by how much,
// and the measured reason.
type Loss struct {
	// Cell names the part and load ("W2 1.5×"), with the policy and
	// balancers for the balancers goal.
	Cell string
	// Goal names the goal lost (short).
	Goal string
	// Run and Figure are the losing run and its figure; Rival and
	// RivalFigure the run it is held against ("" for none).
	Run, Figure, Rival, RivalFigure string
	// Reason is computed from the results (see diagnose).
	Reason string
}

// tally aggregates one goal's cells.
type tally struct {
	met, missed  int
	notMeasured  []string
	worst        string
	worstRatio   float64
	losses       []Loss
	missedCells  []string
	missingRival map[string]bool
}

func (t *tally) measured(ok bool, cell string) {
	if ok {
		t.met++
		return
	}
	t.missed++
	if !slices.Contains(t.missedCells, cell) {
		t.missedCells = append(t.missedCells, cell)
	}
}

func (t *tally) worstIs(ratio float64, text string) {
	if t.worst == "" || ratio > t.worstRatio {
		t.worst, t.worstRatio = text, ratio
	}
}

// goal fills g's value, status and reason from the tally.
func (t *tally) goal(g Goal, unit string) Goal {
	n := t.met + t.missed
	switch {
	case n == 0:
		g.Status, g.Value = NotMeasured, "-"
	case t.missed > 0:
		g.Status = Missed
	default:
		g.Status = Met
	}
	if n > 0 {
		g.Value = fmt.Sprintf("%d of %d %s pass", t.met, n, unit)
		if t.worst != "" {
			g.Value += "; worst " + t.worst
		}
	}
	var why []string
	if t.missed > 0 {
		why = append(why, "misses in "+strings.Join(t.missedCells, ", ")+" (see the losing cells)")
	}
	if len(t.missingRival) > 0 {
		var ps []string
		for p := range t.missingRival {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		why = append(why, "cells without runs of "+strings.Join(ps, ", "))
	}
	if len(t.notMeasured) > 0 {
		why = append(why, "not measured: "+strings.Join(t.notMeasured, "; "))
	}
	if len(why) == 0 {
		why = append(why, "")
	}
	g.Why = strings.Join(why, "; ")
	return g
}

// MatrixGoals evaluates the matrix goals over every part and returns them
// with every losing cell. A goal none of whose cells has the runs it needs
// is "not measured"; one missed cell misses it.
func MatrixGoals(sets []Set) ([]Goal, []Loss) {
	cells := cellsOf(sets)
	var goals []Goal
	var losses []Loss
	for _, f := range []func([]*cell) (Goal, []Loss){goalEveryCell, goalSharing, goalW1, goalManyBalancers} {
		g, l := f(cells)
		goals, losses = append(goals, g), append(losses, l...)
	}
	return goals, losses
}

func goalEveryCell(cells []*cell) (Goal, []Loss) {
	g := Goal{Workload: "matrix", Name: fmt.Sprintf("every cell: cost_model TTFT p99 ≤ %.2f× the best of %s, and goodput within %.0f%% of the best",
		goalCellP99Slack, strings.Join(goalRivals, ", "), 100*(1-goalCellGoodShare))}
	t := tally{missingRival: map[string]bool{}}
	for _, c := range cells {
		cm := c.run(ownPolicy)
		have, missing := c.present(goalRivals)
		if cm == nil || len(have) == 0 {
			if cm != nil || len(have) > 0 {
				t.notMeasured = append(t.notMeasured, c.name()+" (needs cost_model and a rival)")
			}
			continue
		}
		if c.load == 1 {
			for _, p := range missing {
				t.missingRival[p] = true
			}
		}
		bp, bg := c.best(have, (*Group).p99), c.best(have, negGoodput)
		if bp.p99() <= 0 {
			t.notMeasured = append(t.notMeasured, c.name()+" (no TTFT measured)")
			continue
		}
		ratio := cm.p99() / bp.p99()
		okP99 := ratio <= goalCellP99Slack
		okGood := cm.goodput() >= goalCellGoodShare*bg.goodput()
		t.measured(okP99 && okGood, c.name())
		t.worstIs(ratio, fmt.Sprintf("%s: %.2f× (%.0f / %.0f ms, %s)", c.name(), ratio, cm.p99(), bp.p99(), bp.Label))
		if !okP99 {
			t.losses = append(t.losses, Loss{Cell: c.name(), Goal: "p99 vs the best rival", Run: cm.Label, Figure: fmt.Sprintf("%.0f ms (%.2f×)", cm.p99(), ratio),
				Rival: bp.Label, RivalFigure: fmt.Sprintf("%.0f ms", bp.p99()), Reason: diagnose(cm, bp, c.replicas)})
		}
		if !okGood {
			t.losses = append(t.losses, Loss{Cell: c.name(), Goal: "goodput vs the best rival", Run: cm.Label,
				Figure: fmt.Sprintf("%.2f/s (%.1f%% good)", cm.goodput(), 100*cm.good()), Rival: bg.Label,
				RivalFigure: fmt.Sprintf("%.2f/s (%.1f%% good)", bg.goodput(), 100*bg.good()), Reason: goodResolution(cm, bg) + "; " + diagnose(cm, bg, c.replicas)})
		}
	}
	return t.goal(g, "cells"), t.losses
}

func goalSharing(cells []*cell) (Goal, []Loss) {
	g := Goal{Workload: "matrix", Name: fmt.Sprintf("where prompts share prefixes (%s): cost_model's TTFT p50 and p99 the lowest of all policies or within %.0f%%",
		strings.Join(sharingWorkloads, ", "), 100*(goalSharingSlack-1))}
	t := tally{}
	for _, c := range cells {
		if !slices.Contains(sharingWorkloads, c.workload) {
			continue
		}
		cm, pols := c.run(ownPolicy), c.policies()
		if cm == nil || len(pols) < 2 {
			if len(pols) > 0 {
				t.notMeasured = append(t.notMeasured, c.name()+" (needs cost_model and another policy)")
			}
			continue
		}
		ok := true
		for _, m := range []struct {
			name string
			f    func(*Group) float64
		}{{"p50", (*Group).p50}, {"p99", (*Group).p99}} {
			low := c.best(pols, m.f)
			if m.f(low) <= 0 {
				continue
			}
			ratio := m.f(cm) / m.f(low)
			t.worstIs(ratio, fmt.Sprintf("%s %s: %.2f× (%.0f / %.0f ms, %s)", c.name(), m.name, ratio, m.f(cm), m.f(low), low.Label))
			if ratio > goalSharingSlack {
				ok = false
				t.losses = append(t.losses, Loss{Cell: c.name(), Goal: m.name + " vs the lowest", Run: cm.Label, Figure: fmt.Sprintf("%.0f ms (%.2f×)", m.f(cm), ratio),
					Rival: low.Label, RivalFigure: fmt.Sprintf("%.0f ms", m.f(low)), Reason: diagnose(cm, low, c.replicas)})
			}
		}
		t.measured(ok, c.name())
	}
	return t.goal(g, "sharing cells"), t.losses
}

func goalW1(cells []*cell) (Goal, []Loss) {
	g := Goal{Workload: bench.W1, Name: fmt.Sprintf("W1: cost_model TTFT p99 ≤ %.2f× round_robin's, hit rate ≥ %.0f%% of the exact-state oracle's, predictions ≥ %.0f%% exact",
		goalW1VsRR, 100*goalW1OracleShare, 100*goalW1Predictions)}
	var c *cell
	for _, x := range cells {
		if x.workload == bench.W1 && x.load == 1 {
			c = x
			break
		}
	}
	if c == nil || c.run(ownPolicy) == nil {
		return notMeasured(g, "no W1 cost_model run at 1×"), nil
	}
	cm := c.run(ownPolicy)
	var parts, missing []string
	var losses []Loss
	ok := true
	if rr := c.run("round_robin"); rr == nil || rr.p99() <= 0 {
		missing = append(missing, "a round_robin run")
	} else {
		r := cm.p99() / rr.p99()
		parts = append(parts, fmt.Sprintf("p99 %.2f× round_robin (%.0f / %.0f ms)", r, cm.p99(), rr.p99()))
		if r > goalW1VsRR {
			ok = false
			losses = append(losses, Loss{Cell: c.name(), Goal: "W1 p99 vs round_robin", Run: cm.Label, Figure: fmt.Sprintf("%.0f ms (%.2f×)", cm.p99(), r),
				Rival: rr.Label, RivalFigure: fmt.Sprintf("%.0f ms", rr.p99()), Reason: diagnose(cm, rr, c.replicas)})
		}
	}
	if o := c.oracle; o == nil || o.hit() <= 0 {
		missing = append(missing, "an oracle run that hits (bench compare --oracle)")
	} else {
		share := cm.hit() / o.hit()
		parts = append(parts, fmt.Sprintf("hit rate %.0f%% of the oracle's (%.3f / %.3f)", 100*share, cm.hit(), o.hit()))
		if share < goalW1OracleShare {
			ok = false
			losses = append(losses, Loss{Cell: c.name(), Goal: "W1 hit rate vs the oracle", Run: cm.Label, Figure: fmt.Sprintf("%.3f (%.0f%%)", cm.hit(), 100*share),
				Rival: o.Label, RivalFigure: fmt.Sprintf("%.3f", o.hit()), Reason: diagnose(cm, o, c.replicas)})
		}
	}
	if n := cm.mean(func(r *bench.Result) float64 { return float64(r.Summary.Predicted) }); n <= 0 {
		missing = append(missing, "predictions (x-inferrail-cached-tokens)")
	} else {
		ex := cm.mean(func(r *bench.Result) float64 { return r.Summary.PredictionExact })
		parts = append(parts, fmt.Sprintf("predictions %.1f%% exact", 100*ex))
		if ex < goalW1Predictions {
			ok = false
			mae := cm.mean(func(r *bench.Result) float64 { return r.Summary.PredictionMAE })
			losses = append(losses, Loss{Cell: c.name(), Goal: "W1 predictions", Run: cm.Label, Figure: fmt.Sprintf("%.1f%% exact", 100*ex),
				Reason: fmt.Sprintf("mean absolute error %.0f tokens over %.0f predicted requests; %s", mae, n, diagnose(cm, nil, c.replicas))})
		}
	}
	g.Value = strings.Join(parts, "; ")
	switch {
	case !ok:
		g.Status, g.Why = Missed, "see the losing cells"
	case len(missing) > 0:
		g.Status, g.Why = NotMeasured, "needs "+strings.Join(missing, ", ")
		if g.Value == "" {
			g.Value = "-"
		}
	default:
		g.Status = Met
	}
	return g, losses
}

func goalManyBalancers(cells []*cell) (Goal, []Loss) {
	g := Goal{Workload: "matrix", Name: fmt.Sprintf("%d balancers keep ≥ %.0f%% of one balancer's hit rate and TTFT p99 within %.1f× of one balancer's, every cell",
		goalMultiBalancers, 100*goalMultiHitShare, goalMultiP99Slack)}
	t := tally{}
	for _, c := range cells {
		var policies []string
		for p := range c.multi {
			policies = append(policies, p)
		}
		slices.Sort(policies)
		for _, p := range policies {
			one := c.run(p)
			for _, b := range sortedKeys(c.multi[p]) {
				if b != goalMultiBalancers {
					continue
				}
				many := c.multi[p][b]
				name := fmt.Sprintf("%s %s ×%d balancers", c.name(), p, b)
				if one == nil || one.p99() <= 0 || math.IsInf(one.p99(), 1) {
					t.notMeasured = append(t.notMeasured, name+" (no one-balancer run)")
					continue
				}
				ok := true
				r := many.p99() / one.p99()
				why := func() string { return diagnose(many, one, c.replicas) + c.blindMulti(p, b) }
				t.worstIs(r, fmt.Sprintf("%s: p99 %.2f× (%.0f / %.0f ms)", name, r, many.p99(), one.p99()))
				if r > goalMultiP99Slack {
					ok = false
					t.losses = append(t.losses, Loss{Cell: name, Goal: "p99 with many balancers", Run: many.Label, Figure: fmt.Sprintf("%.0f ms (%.2f×)", many.p99(), r),
						Rival: one.Label, RivalFigure: fmt.Sprintf("%.0f ms", one.p99()), Reason: why()})
				}
				if one.hit() > 0 {
					share := many.hit() / one.hit()
					if share < goalMultiHitShare {
						ok = false
						t.losses = append(t.losses, Loss{Cell: name, Goal: "hit rate with many balancers", Run: many.Label, Figure: fmt.Sprintf("%.3f (%.0f%%)", many.hit(), 100*share),
							Rival: one.Label, RivalFigure: fmt.Sprintf("%.3f", one.hit()), Reason: why()})
					}
				}
				t.measured(ok, name)
			}
		}
	}
	return t.goal(g, "cells"), t.losses
}

// blindMulti is what b balancers cost round robin in the cell, which reads
// no shared view: its p99 with b balancers over its p99 with one. It is
// the part of another policy's loss that does not come from acting on a
// gossiped view (b balancer processes on the machine's cores, b rotations
// instead of one), and empty for round robin itself or without its runs.
func (c *cell) blindMulti(policy string, b int) string {
	one, many := c.run("round_robin"), c.multi["round_robin"][b]
	if policy == "round_robin" || one == nil || many == nil || one.p99() <= 0 || math.IsInf(one.p99(), 1) {
		return ""
	}
	return fmt.Sprintf("; round_robin, which reads no view, ×%d in this cell: p99 %.2f× its one-balancer run's (%.0f / %.0f ms)",
		b, many.p99()/one.p99(), many.p99(), one.p99())
}

func sortedKeys(m map[int]*Group) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// lossTable writes the losing cells as a markdown table.
func lossTable(sb *strings.Builder, losses []Loss) {
	if len(losses) == 0 {
		sb.WriteString("No losing cell among the measured ones.\n")
		return
	}
	sb.WriteString("| cell | goal | run | figure | held against | its figure | measured reason |\n|---|---|---|---|---|---|---|\n")
	for _, l := range losses {
		fmt.Fprintf(sb, "| %s | %s | %s | %s | %s | %s | %s |\n", l.Cell, l.Goal, l.Run, l.Figure, dash(l.Rival), dash(l.RivalFigure), dash(l.Reason))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
