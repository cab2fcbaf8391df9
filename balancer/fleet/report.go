package fleet

import (
	"math"
	"time"

	"github.com/inferrail/inferrail/internal/load"
)

// This file holds what a replica's responses tell the balancer between gossip
// periods: the load report its sidecar returns with every response
// (internal/load, the endpoint-load-metrics header), and the measured-to-estimated TTFT ratio that
// corrects cost_model's estimates for the replica.

// responseReport is a response's load report, this balancer's share in it,
// and when it arrived.
type responseReport struct {
	r   load.Report
	own load.Share
	at  time.Time
}

// ObserveReport records the load report of a response from the replica and
// this balancer's share in it (load.ParseHeader), received at at. Reports
// older than the one held are dropped.
func (r *Replica) ObserveReport(rep load.Report, own load.Share, at time.Time) {
	n := &responseReport{r: rep, own: own, at: at}
	for {
		cur := r.report.Load()
		if cur != nil && cur.at.After(at) {
			return
		}
		if r.report.CompareAndSwap(cur, n) {
			return
		}
	}
}

// TTFT correction bounds and smoothing: each observation moves the log of the
// ratio a tenth of the way, and the ratio stays within [1/4, 4].
const (
	ttftAlpha    = 0.1
	ttftMaxRatio = 4.0
)

// ObserveTTFT records a request's measured time to first token against the
// cost model's estimate for it (both > 0; others are ignored).
func (r *Replica) ObserveTTFT(measured, estimated time.Duration) {
	if measured <= 0 || estimated <= 0 {
		return
	}
	x := math.Log(float64(measured) / float64(estimated))
	lim := math.Log(ttftMaxRatio)
	x = max(-lim, min(lim, x))
	for {
		old := r.logTTFT.Load()
		cur := math.Float64frombits(old)
		next := cur + ttftAlpha*(x-cur)
		if r.logTTFT.CompareAndSwap(old, math.Float64bits(next)) {
			r.ttftSamples.Add(1)
			return
		}
	}
}

// TTFTScale returns the replica's running ratio of measured to estimated TTFT
// (1 before any observation).
func (r *Replica) TTFTScale() float64 { return math.Exp(math.Float64frombits(r.logTTFT.Load())) }

// observedTTFTScale returns TTFTScale, or 0 before any observation (a
// candidate then takes its fleet's mean, route.Candidate.TTFTScale).
func (r *Replica) observedTTFTScale() float64 {
	if r.ttftSamples.Load() == 0 {
		return 0
	}
	return r.TTFTScale()
}
