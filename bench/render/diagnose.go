package render

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// diagnose says, from the results alone, why own did worse than rival
// (nil: no rival, own's figures only): the hit rates, how requests spread
// over replicas (the busiest replica's share against a fair share, and the
// most requests awaiting their first token on one replica at once), the
// shape of the TTFT distribution (a tail only, or every request slower),
// prediction accuracy, the engines' preemptions, the TTFTs the engines
// measured themselves, failures, stalls of the load generator and stalls of
// the whole fleet.
func diagnose(own, rival *Group, replicas int) string {
	var out []string
	if rival != nil {
		if oh, rh := own.hit(), rival.hit(); rh-oh > 0.02 {
			out = append(out, fmt.Sprintf("hit rate %.3f vs %.3f: more uncached prefill", oh, rh))
			if text, ok := awayText(own, rival); ok {
				out = append(out, text)
			}
		} else if oh-rh > 0.02 {
			out = append(out, fmt.Sprintf("hit rate %.3f vs %.3f: the extra hits did not pay", oh, rh))
		}
	}
	if replicas > 0 {
		fair := 1 / float64(replicas)
		if s := busiest(own); s > 0 {
			text := fmt.Sprintf("busiest replica %.0f%% of requests (fair %.0f%%", 100*s, 100*fair)
			if rival != nil {
				if rs := busiest(rival); rs > 0 {
					text += fmt.Sprintf(", %s %.0f%%", rival.Label, 100*rs)
				}
			}
			if s > 1.2*fair || rival == nil || s > busiest(rival)+0.03 {
				out = append(out, text+")")
			}
		}
	}
	if rival != nil {
		op, rp := preemptions(own), preemptions(rival)
		if op >= 10 && op > 1.5*rp {
			out = append(out, fmt.Sprintf("the engines preempted %.0f sequences a run for want of KV memory (%s %.0f)", op, rival.Label, rp))
		}
	}
	if q := peakWaiting(own); q > 0 {
		text := fmt.Sprintf("up to %.0f requests awaiting their first token on one replica", q)
		if rival != nil {
			if rq := peakWaiting(rival); rq > 0 {
				text += fmt.Sprintf(" (%s %.0f)", rival.Label, rq)
			}
		}
		out = append(out, text)
	}
	if rival != nil && rival.p50() > 0 && rival.p99() > 0 {
		r50, r99 := own.p50()/rival.p50(), own.p99()/rival.p99()
		switch {
		case r50 <= goalSharingSlack && r99 > goalSharingSlack:
			out = append(out, fmt.Sprintf("a tail only: p50 %.0f vs %.0f ms, p99 %.0f vs %.0f ms", own.p50(), rival.p50(), own.p99(), rival.p99()))
		case r50 > goalSharingSlack && r99 > goalSharingSlack:
			out = append(out, fmt.Sprintf("every request slower: p50 %.2f×, p99 %.2f×", r50, r99))
		case r50 > goalSharingSlack:
			out = append(out, fmt.Sprintf("the median only: p50 %.2f×, p99 %.2f×", r50, r99))
		}
	}
	if rival != nil {
		if text, ok := unevenMedian(own, rival); ok {
			out = append(out, text)
		}
		if text, ok := unevenGoodput(own, rival); ok {
			out = append(out, text)
		}
		if text, ok := engineSide(own, rival); ok {
			out = append(out, text)
		}
		if text, ok := tailSplit(own, rival); ok {
			out = append(out, text)
		}
	}
	if bench.Predicts(own.Run.Policy) {
		if n := own.mean(func(r *bench.Result) float64 { return float64(r.Summary.Predicted) }); n > 0 {
			if ex := own.mean(func(r *bench.Result) float64 { return r.Summary.PredictionExact }); ex < goalW1Predictions {
				out = append(out, fmt.Sprintf("predictions %.1f%% exact", 100*ex))
			}
		}
	}
	if f := own.mean(func(r *bench.Result) float64 { return float64(r.Summary.Failed) }); f > 0 {
		out = append(out, fmt.Sprintf("%.0f failed requests", f))
	}
	if lag := own.mean(func(r *bench.Result) float64 { return r.Summary.SendLag.P99 }); lag > stallLagMS {
		out = append(out, fmt.Sprintf("the load generator stalled (send lag p99 %.0f ms)", lag))
	}
	for i, r := range own.Reps {
		if st, ok := fleetStall(r.Records); ok {
			out = append(out, fmt.Sprintf("repetition %d: %d of its %d slowest requests, on %d replicas, were sent within %.0f ms: a stall of the whole fleet (the machine), not a queue on one replica",
				i, st.requests, st.of, st.replicas, float64(st.span)/float64(time.Millisecond)))
		}
	}
	if len(own.Reps) > 1 {
		lo, hi := own.spread(func(r *bench.Result) float64 { return r.Summary.TTFT.P99 })
		if lo > 0 && hi > 2*lo {
			out = append(out, fmt.Sprintf("p99 varies %.0f–%.0f ms across repetitions", lo, hi))
		}
	}
	if len(out) == 0 {
		return "no cause in hit rate, balance, predictions or the load generator"
	}
	return strings.Join(out, "; ")
}

// awayText says, where the workload is of prompts in shared-prefix groups,
// how many requests a run own sent away from every replica their group had
// gone to, against rival, where own sent more, and what share of their
// prompts the requests sent to their group's replicas found cached, where
// own's found less (ok false when neither).
func awayText(own, rival *Group) (string, bool) {
	op, ok := groupPlacement(own)
	if !ok {
		return "", false
	}
	rp, ok := groupPlacement(rival)
	if !ok {
		return "", false
	}
	var out []string
	if op.away >= rp.away+2 {
		out = append(out, fmt.Sprintf("%.1f requests a run went to a replica none of their group's earlier requests had gone to (%s %.1f), each computing its group's prompt again",
			op.away, rival.Label, rp.away))
	}
	if op.homeShare < rp.homeShare-0.05 {
		out = append(out, fmt.Sprintf("requests sent where their group had gone found %.0f%% of their prompt tokens cached (%s %.0f%%): the rest evicted there or not yet computed",
			100*op.homeShare, rival.Label, 100*rp.homeShare))
	}
	return strings.Join(out, "; "), len(out) > 0
}

// goodResolution says how many good requests a run own lost against rival
// and whether so few requests resolve the gap. A run's good count is
// binomial, so two equally good policies differ between means of r
// repetitions of n requests by about sqrt(2·n·p·(1-p)/r), p the two
// policies' mean good fraction (the same chance for both, and not 0 when
// one of them had every request good); a gap under twice that is not one
// the cell can tell from chance. The trace at 1.5x holds 116 requests a
// run: one request is 0.86% of its goodput, about the 1% goal itself.
func goodResolution(own, rival *Group) string {
	if len(own.Reps) == 0 {
		return "no measured requests"
	}
	n := own.mean(func(r *bench.Result) float64 { return float64(r.Summary.Requests) })
	if n <= 0 {
		return "no measured requests"
	}
	good := func(g *Group) float64 {
		return g.mean(func(r *bench.Result) float64 { return r.Summary.GoodFraction * float64(r.Summary.Requests) })
	}
	gap := good(rival) - good(own)
	p := (own.good() + rival.good()) / 2
	sd := math.Sqrt(2 * n * p * (1 - p) / float64(len(own.Reps)))
	text := fmt.Sprintf("%.1f fewer good requests a run of %.0f (one request is %.2f%% of a run's goodput)", gap, n, 100/n)
	if gap < 2*sd {
		text += fmt.Sprintf(", within twice the chance spread of the two means (%.1f requests): too few requests to resolve the gap", sd)
	}
	return text
}

// preemptions is the mean over repetitions of the sequences the engines
// preempted (0 where their counters were not scraped).
func preemptions(g *Group) float64 {
	return g.mean(func(r *bench.Result) float64 {
		if r.EngineCounters == nil {
			return 0
		}
		return r.EngineCounters.Preemptions
	})
}

// busiest is the mean over repetitions of the largest replica share.
func busiest(g *Group) float64 {
	return g.mean(func(r *bench.Result) float64 {
		m := 0.0
		for _, v := range r.Summary.ReplicaShare {
			m = math.Max(m, v)
		}
		return m
	})
}

// peakWaiting is the mean over repetitions of the most measured requests
// awaiting their first token on one replica at once (from each request's
// scheduled time to its first token, or its end when it failed); 0 without
// per-request replicas.
func peakWaiting(g *Group) float64 {
	return g.mean(func(r *bench.Result) float64 { return float64(maxWaiting(r.Records)) })
}

func maxWaiting(records []bench.Record) int {
	type edge struct {
		at    time.Duration
		delta int
	}
	by := map[string][]edge{}
	for i := range records {
		rec := &records[i]
		if rec.Warmup || rec.Replica == "" {
			continue
		}
		end := rec.Scheduled + rec.TTFT
		if !rec.OK() {
			end = rec.Scheduled + rec.E2E
		}
		by[rec.Replica] = append(by[rec.Replica], edge{rec.Scheduled, 1}, edge{end, -1})
	}
	peak := 0
	for _, edges := range by {
		slices.SortFunc(edges, func(a, b edge) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return a.delta - b.delta // ends before starts at the same instant
		})
		n := 0
		for _, e := range edges {
			n += e.delta
			peak = max(peak, n)
		}
	}
	return peak
}

// stall is the tail of a run that a fleet-wide stall explains.
type stall struct {
	requests, of, replicas int
	span, end              time.Duration // end: when its last slow request was sent
}

// Stall thresholds: when at least half of the slowest 1% of a run's measured
// requests (at least stallTail of them) were sent within stallSpan of each
// other, on more than one replica and at least half of those that served,
// one event slowed every replica at once (the machine stalled): not a queue
// that routing built.
const (
	stallTail = 5
	stallSpan = time.Second
)

// fleetStall reports whether most of records' slowest requests are one
// fleet-wide stall.
func fleetStall(records []bench.Record) (stall, bool) {
	var ok []*bench.Record
	served := map[string]bool{}
	for i := range records {
		rec := &records[i]
		if rec.Warmup || !rec.OK() || rec.Replica == "" {
			continue
		}
		ok = append(ok, rec)
		served[rec.Replica] = true
	}
	n := max(len(ok)/100, stallTail)
	if len(ok) < 10*n {
		return stall{}, false
	}
	slices.SortFunc(ok, func(a, b *bench.Record) int { return int(b.TTFT - a.TTFT) })
	tail := ok[:n]
	slices.SortFunc(tail, func(a, b *bench.Record) int { return int(a.Scheduled - b.Scheduled) })
	var best stall
	for i, j := 0, 0; i < len(tail); i++ { // the window [tail[i], tail[j-1]] of at most stallSpan
		for j < len(tail) && tail[j].Scheduled-tail[i].Scheduled <= stallSpan {
			j++
		}
		if j-i <= best.requests {
			continue
		}
		on := map[string]bool{}
		for _, rec := range tail[i:j] {
			on[rec.Replica] = true
		}
		if len(on) >= 2 && 2*len(on) >= len(served) {
			best = stall{requests: j - i, replicas: len(on), span: tail[j-1].Scheduled - tail[i].Scheduled, end: tail[j-1].Scheduled}
		}
	}
	if 2*best.requests < n || !recovered(ok, best.end) || !steady(ok) {
		return stall{}, false
	}
	best.of = n
	return best, true
}

// steady reports whether the run was not building a queue: the median TTFT
// of the requests sent in its second half is at most 1.5 times that of the
// first half (an overload's grows as it goes).
func steady(ok []*bench.Record) bool {
	lo, hi := ok[0].Scheduled, ok[0].Scheduled
	for _, rec := range ok {
		lo, hi = min(lo, rec.Scheduled), max(hi, rec.Scheduled)
	}
	mid := lo + (hi-lo)/2
	var first, second []time.Duration
	for _, rec := range ok {
		if rec.Scheduled < mid {
			first = append(first, rec.TTFT)
		} else {
			second = append(second, rec.TTFT)
		}
	}
	if len(first) == 0 || len(second) == 0 {
		return false
	}
	slices.Sort(first)
	slices.Sort(second)
	return 2*second[len(second)/2] <= 3*first[len(first)/2]
}

// recovered reports whether the requests sent in the stallSpan after end
// (at least stallTail of them) had a median TTFT at most twice the run's:
// the slowness passed, as a stall does and an overload that builds up to
// the end of the run does not. ok is sorted slowest first.
func recovered(ok []*bench.Record, end time.Duration) bool {
	var after []time.Duration
	for _, rec := range ok {
		if rec.Scheduled > end && rec.Scheduled <= end+stallSpan {
			after = append(after, rec.TTFT)
		}
	}
	if len(after) < stallTail {
		return false
	}
	slices.Sort(after)
	median := ok[len(ok)/2].TTFT
	return after[len(after)/2] <= 2*median
}
