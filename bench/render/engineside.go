package render

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// engineSide compares own's and rival's TTFTs as the engines measured them,
// from each request's arrival at the engine to its first token
// (bench.Record.EngineTTFT): what is left when the load generator, the
// balancers, the sidecars and the machine they share are taken out. When
// the engines' own p99 is within goalSharingSlack of the rival's while the
// client's is not, the gap lies outside the engines; a stall of the machine
// (fleetStall) shows there. ok is false unless both have the engines'
// timings for at least minEngineShare of their answered requests (the
// simulator lists them; results from before it did have none).
func engineSide(own, rival *Group) (text string, ok bool) {
	o50, o99, ok1 := engineTTFT(own)
	r50, r99, ok2 := engineTTFT(rival)
	if !ok1 || !ok2 || r50 <= 0 || r99 <= 0 {
		return "", false
	}
	text = fmt.Sprintf("at the engines (arrival there to first token) p50 %.0f vs %.0f ms, p99 %.0f vs %.0f ms", o50, r50, o99, r99)
	if o99 <= goalSharingSlack*r99 && rival.p99() > 0 && own.p99() > goalSharingSlack*rival.p99() {
		text += ": the p99 gap is outside the engines (the load generator, the proxies and the machine they share)"
	}
	return text, true
}

// minEngineShare is the share of a run's answered requests that must have
// the engines' timings for engineSide.
const minEngineShare = 0.9

// engineTTFT returns the mean over repetitions of the engines' own TTFT p50
// and p99 of the measured answered requests, in ms; ok is false when a
// repetition lacks the timings of more than 1 − minEngineShare of them.
func engineTTFT(g *Group) (p50, p99 float64, ok bool) {
	if len(g.Reps) == 0 {
		return 0, 0, false
	}
	for _, r := range g.Reps {
		recs, ok := engineTimed(r, func(rec *bench.Record) bool { return rec.EngineTTFT > 0 })
		if !ok {
			return 0, 0, false
		}
		ts := make([]time.Duration, len(recs))
		for i, rec := range recs {
			ts[i] = rec.EngineTTFT
		}
		d := bench.NewDist(ts)
		p50 += d.P50
		p99 += d.P99
	}
	n := float64(len(g.Reps))
	return p50 / n, p99 / n, true
}

// engineTimed returns r's measured answered requests that have the engines'
// timings (timed), and whether they are at least minEngineShare of the
// answered ones.
func engineTimed(r *bench.Result, timed func(*bench.Record) bool) ([]*bench.Record, bool) {
	var recs []*bench.Record
	answered := 0
	for i := range r.Records {
		rec := &r.Records[i]
		if rec.Warmup || !rec.OK() {
			continue
		}
		answered++
		if timed(rec) {
			recs = append(recs, rec)
		}
	}
	return recs, answered > 0 && float64(len(recs)) >= minEngineShare*float64(answered)
}

// tailShare is the share of a run's answered requests, the slowest by the
// client's TTFT, whose time tailHops splits.
const tailShare = 0.01

// hops is where requests spent their TTFT, in ms: the load generator's
// lateness in sending (lag), the way to the engine (in: the client's
// connection, the balancer, the sidecar and the engine front end's parsing),
// the engine's own TTFT, and the
// way back to the client (out: the same proxies and the client's reading).
// route is the part of in the balancer spent between the request's headers
// and its sending (bench.Record.BalancerRoute), when routed: every request
// split had it. est and mem are the balancer's estimate of the engine's
// part and the wait for KV memory in it (bench.Record.EstimatedTTFT,
// EstimatedMemoryWait), when estimated: every request split had one.
//
// picks counts those requests by the rule that picked their replica
// (bench.Record.RouteReason), over every repetition, with what each rule's
// picks were estimated above the lowest candidate's estimate in all
// (bench.Record.LowestEstimatedTTFT); empty when the balancer stated none.
type hops struct {
	lag, in, engine, out float64
	route                float64
	routed               bool
	est, mem             float64
	estimated            bool
	picks                map[string]*pickCost
}

// pickCost is the tail requests one rule picked a replica for (hops.picks):
// how many, and their estimates' sum above the lowest candidate's, in ms.
type pickCost struct {
	n     int
	above float64
}

// tailHops returns the mean over repetitions of the mean hops of each run's
// slowest tailShare of measured answered requests (at least one). Every
// part comes from one request's times (bench.Record.EngineArrival), so the
// four add up to those requests' mean TTFT, which p99s of the parts would
// not. ok is false unless every repetition has the engines' arrivals for at
// least minEngineShare of its answered requests (results from before the
// simulator listed them have none).
func tailHops(g *Group) (h hops, ok bool) {
	if len(g.Reps) == 0 {
		return h, false
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	h.routed, h.estimated = true, true
	for _, r := range g.Reps {
		recs, ok := engineTimed(r, func(rec *bench.Record) bool { return rec.EngineTTFT > 0 && rec.EngineArrival > 0 })
		if !ok {
			return hops{}, false
		}
		slices.SortFunc(recs, func(a, b *bench.Record) int { return cmp.Compare(b.TTFT, a.TTFT) })
		n := max(1, int(math.Ceil(tailShare*float64(len(recs)))))
		var sum hops
		for _, rec := range recs[:n] {
			in := rec.EngineArrival - rec.Scheduled - rec.SendLag
			sum.lag += ms(rec.SendLag)
			sum.in += ms(in)
			sum.engine += ms(rec.EngineTTFT)
			sum.out += ms(rec.TTFT - rec.SendLag - in - rec.EngineTTFT)
			sum.route += ms(rec.BalancerRoute)
			h.routed = h.routed && rec.BalancerRoute > 0
			sum.est += ms(rec.EstimatedTTFT)
			sum.mem += ms(rec.EstimatedMemoryWait)
			h.estimated = h.estimated && rec.EstimatedTTFT > 0
			if rec.RouteReason != "" {
				if h.picks == nil {
					h.picks = map[string]*pickCost{}
				}
				pc := h.picks[rec.RouteReason]
				if pc == nil {
					pc = &pickCost{}
					h.picks[rec.RouteReason] = pc
				}
				pc.n++
				if rec.LowestEstimatedTTFT > 0 {
					pc.above += ms(max(rec.EstimatedTTFT-rec.LowestEstimatedTTFT, 0))
				}
			}
		}
		k := float64(n) * float64(len(g.Reps))
		h.lag, h.in, h.engine, h.out = h.lag+sum.lag/k, h.in+sum.in/k, h.engine+sum.engine/k, h.out+sum.out/k
		h.route += sum.route / k
		h.est, h.mem = h.est+sum.est/k, h.mem+sum.mem/k
	}
	return h, true
}

// tailSplit compares where own's and rival's slowest requests spent their
// time (tailHops).
func tailSplit(own, rival *Group) (string, bool) {
	o, ok1 := tailHops(own)
	r, ok2 := tailHops(rival)
	if !ok1 || !ok2 {
		return "", false
	}
	in := fmt.Sprintf("%.0f vs %.0f ms to the engine", o.in, r.in)
	if o.routed && r.routed {
		in += fmt.Sprintf(" (%.1f vs %.1f ms of it in the balancer)", o.route, r.route)
	}
	there := fmt.Sprintf("%.0f vs %.0f ms there", o.engine, r.engine)
	switch {
	case o.estimated && r.estimated:
		there += fmt.Sprintf(" (estimated %.0f vs %.0f, of it waiting for memory %.0f vs %.0f)", o.est, r.est, o.mem, r.mem)
	case o.estimated:
		there += fmt.Sprintf(" (estimated %.0f, of it waiting for memory %.0f)", o.est, o.mem)
	}
	text := fmt.Sprintf("the slowest %.0f%% of requests (means): sent %.0f vs %.0f ms late, %s, %s, %.0f vs %.0f ms back",
		100*tailShare, o.lag, r.lag, in, there, o.out, r.out)
	if len(o.picks) > 0 {
		text += "; their replicas picked by " + o.pickText()
		if len(r.picks) > 0 {
			text += " vs " + r.pickText()
		}
	}
	return text, true
}

// pickText lists h.picks, the most frequent rule first (then by name), each
// with its count and, where at least 1 ms, its picks' mean estimate above
// the lowest candidate's: "hot_prefix_replica 1 (estimated 170 ms above the
// lowest), lowest_ttft 1".
func (h hops) pickText() string {
	reasons := slices.Collect(maps.Keys(h.picks))
	slices.SortFunc(reasons, func(a, b string) int {
		return cmp.Or(cmp.Compare(h.picks[b].n, h.picks[a].n), cmp.Compare(a, b))
	})
	parts := make([]string, len(reasons))
	for i, reason := range reasons {
		pc := h.picks[reason]
		parts[i] = fmt.Sprintf("%s %d", reason, pc.n)
		if above := pc.above / float64(pc.n); above >= 1 {
			parts[i] += fmt.Sprintf(" (estimated %.0f ms above the lowest)", above)
		}
	}
	return strings.Join(parts, ", ")
}
