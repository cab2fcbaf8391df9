package render

import (
	"fmt"
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
		var ts []time.Duration
		answered := 0
		for i := range r.Records {
			rec := &r.Records[i]
			if rec.Warmup || !rec.OK() {
				continue
			}
			answered++
			if rec.EngineTTFT > 0 {
				ts = append(ts, rec.EngineTTFT)
			}
		}
		if answered == 0 || float64(len(ts)) < minEngineShare*float64(answered) {
			return 0, 0, false
		}
		d := bench.NewDist(ts)
		p50 += d.P50
		p99 += d.P99
	}
	n := float64(len(g.Reps))
	return p50 / n, p99 / n, true
}
