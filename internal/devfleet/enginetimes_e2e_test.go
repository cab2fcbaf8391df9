package devfleet_test

import (
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
)

// A bench run on a fleet of the real binary (2 simulators with their
// latency model, 2 sidecars, 1 balancer) sends every request with its own
// X-Request-Id, which the balancer and the sidecar pass to the engine, and
// joins each answered request with the engine's own timing from the
// simulator's /inferrail/debug/requests: a TTFT from the arrival at the
// engine, which is above zero and no longer than the client's (and holds the
// engine's queue before admission), counted from
// the scheduled send, and the arrival by the wall clock, after the client
// sent the request and early enough for the engine's first token to come
// before the client's. The balancer's own times (its Server-Timing header)
// fit between them, and it states what it estimated for each request: a
// TTFT that holds its queue and memory waits, the lowest estimate among the
// candidates, and the rule that picked the replica.
func TestBenchJoinsTheEnginesTimings(t *testing.T) {
	res, _ := runShortW1(t, buildBinary(t), route.PolicyCostModel, false)
	ids := map[string]bool{}
	for _, r := range res.Records {
		if r.RequestID == "" || ids[r.RequestID] {
			t.Errorf("session %d turn %d: request id %q, want one of its own", r.Session, r.Turn, r.RequestID)
		}
		ids[r.RequestID] = true
		if r.EngineTTFT <= 0 || r.EngineTTFT > r.TTFT || r.EngineQueue < 0 || r.EngineQueue > r.EngineTTFT || r.EnginePreemptions < 0 {
			t.Errorf("session %d turn %d (%s): engine TTFT %v, its queue %v, preemptions %d, client TTFT %v; want 0 < engine ≤ client and the queue within the engine's",
				r.Session, r.Turn, r.RequestID, r.EngineTTFT, r.EngineQueue, r.EnginePreemptions, r.TTFT)
		}
		sent := r.Scheduled + r.SendLag
		if r.EngineArrival < sent || r.EngineArrival+r.EngineTTFT > r.Scheduled+r.TTFT {
			t.Errorf("session %d turn %d (%s): sent at %v, first token at %v, engine arrival at %v and its first token %v later; want the engine's span within the client's",
				r.Session, r.Turn, r.RequestID, sent, r.Scheduled+r.TTFT, r.EngineArrival, r.EngineTTFT)
		}
		// The balancer's Server-Timing: its routing lies between the
		// client's sending and the engine's arrival, and its whole span
		// within the client's.
		if r.BalancerRoute <= 0 || r.BalancerUpstream <= 0 {
			t.Errorf("session %d turn %d (%s): balancer route %v, upstream %v; want both above zero", r.Session, r.Turn, r.RequestID, r.BalancerRoute, r.BalancerUpstream)
		}
		if sent+r.BalancerRoute > r.EngineArrival || sent+r.BalancerRoute+r.BalancerUpstream > r.Scheduled+r.TTFT {
			t.Errorf("session %d turn %d (%s): sent at %v, balancer route %v then upstream %v, engine arrival at %v, first token at %v; want the balancer's span within the client's, its routing before the engine",
				r.Session, r.Turn, r.RequestID, sent, r.BalancerRoute, r.BalancerUpstream, r.EngineArrival, r.Scheduled+r.TTFT)
		}
		if r.EstimatedTTFT <= 0 || r.EstimatedQueueWait < 0 || r.EstimatedMemoryWait < 0 || r.EstimatedQueueWait+r.EstimatedMemoryWait > r.EstimatedTTFT+time.Microsecond { // each rounded to the µs
			t.Errorf("session %d turn %d (%s): estimated TTFT %v, queue wait %v, memory wait %v; want an estimate holding both waits",
				r.Session, r.Turn, r.RequestID, r.EstimatedTTFT, r.EstimatedQueueWait, r.EstimatedMemoryWait)
		}
		// And the rule that picked the replica, with the lowest estimate
		// it could have had: a cost_model reason, at most the pick's.
		if !costModelReasons[route.Reason(r.RouteReason)] || r.LowestEstimatedTTFT <= 0 || r.LowestEstimatedTTFT > r.EstimatedTTFT {
			t.Errorf("session %d turn %d (%s): reason %q, lowest estimate %v against the pick's %v; want one of cost_model's reasons and 0 < lowest ≤ the pick's",
				r.Session, r.Turn, r.RequestID, r.RouteReason, r.LowestEstimatedTTFT, r.EstimatedTTFT)
		}
	}
}

// costModelReasons are the reasons a cost_model decision that picked a
// replica may give.
var costModelReasons = map[route.Reason]bool{
	route.ReasonLowestTTFT: true, route.ReasonHotPrefix: true, route.ReasonRotation: true,
	route.ReasonTPOTGuard: true, route.ReasonKVSpill: true, route.ReasonLoadSpill: true, route.ReasonOnlyCandidate: true,
}
