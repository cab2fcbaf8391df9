package render

import (
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// engineSide reports the engines' own TTFTs of both runs, says the gap is
// outside the engines when their p99s are alike while the client's are
// not, says nothing more when the engines' p99s differ as much, and stays
// out of results without the engines' timings.
func TestEngineSide(t *testing.T) {
	run := func(label string, base, engine time.Duration) *Group {
		r := fakeResult(label, bench.RunInfo{Kind: bench.KindPolicy, Policy: label, Balancers: 1, Load: 1}, 0.5, base, 100)
		for i := range r.Records {
			if engine > 0 {
				r.Records[i].EngineTTFT = engine + time.Duration(i)*time.Millisecond
			}
		}
		return &Group{Label: label, Run: r.Run, Reps: []*bench.Result{r}}
	}
	rival := run("round_robin", 100*time.Millisecond, 80*time.Millisecond)

	own := run("cost_model", 200*time.Millisecond, 80*time.Millisecond)
	text, ok := engineSide(own, rival)
	if !ok || !strings.Contains(text, "p50 129 vs 129 ms, p99 178 vs 178 ms") || !strings.Contains(text, "outside the engines") {
		t.Errorf("engines alike, client's p99 2×: %q %v; want both engines' p50 and p99 and the gap placed outside the engines", text, ok)
	}
	if d := diagnose(own, rival, 4); !strings.Contains(d, "at the engines (arrival there to first token)") {
		t.Errorf("diagnose() = %q, want the engines' own TTFTs in it", d)
	}

	slow := run("cost_model", 200*time.Millisecond, 180*time.Millisecond)
	if text, ok := engineSide(slow, rival); !ok || strings.Contains(text, "outside") || !strings.Contains(text, "p99 278 vs 178 ms") {
		t.Errorf("engines as slow as the client: %q %v; want the figures and no verdict", text, ok)
	}

	old := run("cost_model", 200*time.Millisecond, 0)
	if text, ok := engineSide(old, rival); ok {
		t.Errorf("results without the engines' timings: %q, want nothing", text)
	}
}

// tailSplit splits the slowest 1% of each run's requests (one of 100 here,
// the slowest) into the send lag, the way to the engine, the engine's TTFT
// and the way back, which add up to its TTFT; it stays out of results
// without the engines' arrivals.
func TestTailSplit(t *testing.T) {
	run := func(label string, base, lag, in, engine time.Duration) *Group {
		r := fakeResult(label, bench.RunInfo{Kind: bench.KindPolicy, Policy: label, Balancers: 1, Load: 1}, 0.5, base, 100)
		for i := range r.Records {
			rec := &r.Records[i]
			rec.Scheduled = time.Duration(i) * time.Second
			rec.SendLag = lag
			if engine > 0 {
				rec.EngineArrival = rec.Scheduled + lag + in
				rec.EngineTTFT = engine
			}
		}
		return &Group{Label: label, Run: r.Run, Reps: []*bench.Result{r}}
	}
	// The slowest: TTFT base + 99 ms.
	own := run("cost_model-4b", 100*time.Millisecond, 3*time.Millisecond, 40*time.Millisecond, 30*time.Millisecond)
	rival := run("cost_model", 50*time.Millisecond, time.Millisecond, 2*time.Millisecond, 30*time.Millisecond)
	text, ok := tailSplit(own, rival)
	want := "the slowest 1% of requests (means): sent 3 vs 1 ms late, 40 vs 2 ms to the engine, 30 vs 30 ms there, 126 vs 116 ms back"
	if !ok || text != want {
		t.Errorf("tailSplit() = %q %v, want %q", text, ok, want)
	}
	if d := diagnose(own, rival, 4); !strings.Contains(d, want) {
		t.Errorf("diagnose() = %q, want the split in it", d)
	}
	old := run("cost_model", 50*time.Millisecond, time.Millisecond, 0, 0)
	if text, ok := tailSplit(own, old); ok {
		t.Errorf("a rival without the engines' arrivals: %q, want nothing", text)
	}

	// With the balancers' Server-Timing in every record, the way to the
	// engine names the balancer's part of it; the slowest request alone
	// counts.
	route := func(g *Group, slowest, others time.Duration) {
		for i := range g.Reps[0].Records {
			g.Reps[0].Records[i].BalancerRoute = others
		}
		g.Reps[0].Records[99].BalancerRoute = slowest
	}
	route(own, 12500*time.Microsecond, time.Millisecond)
	route(rival, 700*time.Microsecond, time.Millisecond)
	want = "the slowest 1% of requests (means): sent 3 vs 1 ms late, 40 vs 2 ms to the engine (12.5 vs 0.7 ms of it in the balancer), 30 vs 30 ms there, 126 vs 116 ms back"
	if text, ok := tailSplit(own, rival); !ok || text != want {
		t.Errorf("tailSplit() with the balancers' times = %q %v, want %q", text, ok, want)
	}
	rival.Reps[0].Records[99].BalancerRoute = 0
	if text, _ := tailSplit(own, rival); strings.Contains(text, "in the balancer") {
		t.Errorf("a rival without the balancer's time: %q, want no balancer part", text)
	}

	// With the balancer's estimates (its Server-Timing), the engine's part
	// is held against what was estimated for it, of the run that estimates
	// or of both.
	estimate := func(g *Group, est, mem time.Duration) {
		for i := range g.Reps[0].Records {
			g.Reps[0].Records[i].EstimatedTTFT, g.Reps[0].Records[i].EstimatedMemoryWait = est, mem
		}
	}
	estimate(own, 14*time.Millisecond, 6*time.Millisecond)
	if text, _ := tailSplit(own, rival); !strings.Contains(text, "30 vs 30 ms there (estimated 14, of it waiting for memory 6), 126") {
		t.Errorf("tailSplit() with the estimates of one run = %q, want them beside the engine's part", text)
	}
	estimate(rival, 25*time.Millisecond, 0)
	if text, _ := tailSplit(own, rival); !strings.Contains(text, "30 vs 30 ms there (estimated 14 vs 25, of it waiting for memory 6 vs 0), 126") {
		t.Errorf("tailSplit() with the estimates of both = %q, want both", text)
	}
	rival.Reps[0].Records[99].EstimatedTTFT = 0
	if text, _ := tailSplit(rival, own); strings.Contains(text, "estimated") {
		t.Errorf("a run missing an estimate first: %q, want none", text)
	}

	// With the rule that picked each replica (the route metric's desc)
	// and the lowest estimate among the candidates, the slowest requests'
	// picks are named, with what their rule paid by the estimate: here
	// the slowest one (100 requests, so the only one of the 1%) was sent
	// where its estimate was 9 ms above the lowest.
	for i := range own.Reps[0].Records {
		rec := &own.Reps[0].Records[i]
		rec.RouteReason, rec.LowestEstimatedTTFT = "lowest_ttft", rec.EstimatedTTFT
	}
	slow := &own.Reps[0].Records[99]
	slow.RouteReason, slow.LowestEstimatedTTFT = "hot_prefix_replica", 5*time.Millisecond
	if text, _ := tailSplit(own, rival); !strings.HasSuffix(text, "126 vs 116 ms back; their replicas picked by hot_prefix_replica 1 (estimated 9 ms above the lowest)") {
		t.Errorf("tailSplit() with the picks' rules = %q, want the slowest request's rule and its cost", text)
	}
	slow.RouteReason = "lowest_ttft"
	slow.LowestEstimatedTTFT = slow.EstimatedTTFT
	rival.Reps[0].Records[99].RouteReason = "round_robin"
	if text, _ := tailSplit(own, rival); !strings.HasSuffix(text, "; their replicas picked by lowest_ttft 1 vs round_robin 1") {
		t.Errorf("tailSplit() with both runs' rules = %q, want both, and no cost where the pick was the lowest", text)
	}
	own.Reps[0].Records[99].RouteReason = ""
	if text, _ := tailSplit(own, rival); strings.Contains(text, "picked by") {
		t.Errorf("a run whose slowest request has no rule: %q, want none named", text)
	}
}
