//go:build stress

package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestStressHangingEngine: one of three engines stops answering (it accepts
// requests and never replies). The attempts stuck on it time out before
// their first byte and move on; the balancer stops routing to it.
func TestStressHangingEngine(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-h"}, "--zero-latency")
	bal := f.bals[0]
	load := stStartLoad(t, []string{bal.url}, 64, 500, stMix("hang"))
	load.waitDone(t, 1000)
	at := time.Now()
	stFault(t, f.sims[0], `{"kind":"hang","duration":"10m"}`)
	out := stOut(t, bal, "replica-0")
	load.waitDone(t, 2000)
	load.stop()
	during := stCount(load.done(), func(o stOutcome) bool { return o.start.After(at) })
	var slowest time.Duration
	for _, o := range load.done() {
		if o.start.After(at) && o.end.Sub(o.start) > slowest {
			slowest = o.end.Sub(o.start)
		}
	}
	stRecord(t, stRow{Row: "04-hang", Fault: "1 of 3 engines hangs (accepts, never answers)",
		Result: fmt.Sprintf("%d of %d requests failed; taken out after %d ms; the slowest answer took %d ms (an attempt on it moves to another replica when the probes take it out, or at the 2 s first-byte timeout)",
			during.lostBeforeBegin+during.brokeAfterBegin, during.ok+during.lostBeforeBegin+during.brokeAfterBegin, ms(out), ms(slowest)),
		Figures: map[string]any{"requests": during.ok + during.lostBeforeBegin + during.brokeAfterBegin,
			"failed": during.lostBeforeBegin + during.brokeAfterBegin, "out_ms": ms(out), "slowest_ms": ms(slowest),
			"retries": btMetric(t, bal, "inferrail_balancer_retries_total", "")}})
	if n := during.lostBeforeBegin + during.brokeAfterBegin; n > 0 {
		t.Errorf("%d requests failed with a hung engine: %v", n, during.errs)
	}
}

// TestStressFlappingEngine: one of three engines alternates between healthy
// and 503 (on every path, health included) every 100 ms for 10 s. Every
// request succeeds: a 503 before the first byte is retried elsewhere.
func TestStressFlappingEngine(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-f"}, "--zero-latency")
	bal := f.bals[0]
	load := stStartLoad(t, []string{bal.url}, 64, 500, stMix("flap"))
	load.waitDone(t, 1000)
	at := time.Now()
	tick := time.NewTicker(200 * time.Millisecond) // the fault's schedule, not synchronisation
	flaps := 0
	for time.Since(at) < 10*time.Second {
		stFault(t, f.sims[0], `{"kind":"status","status":503,"duration":"100ms"}`)
		flaps++
		<-tick.C
	}
	tick.Stop()
	end := time.Now()
	load.waitDone(t, 500)
	load.stop()
	during := stCount(load.done(), func(o stOutcome) bool { return o.start.After(at) && o.start.Before(end) })
	n := during.ok + during.lostBeforeBegin + during.brokeAfterBegin
	share := 0.0
	if during.ok > 0 {
		share = float64(during.byReplica["replica-0"]) / float64(during.ok)
	}
	ejections := btMetric(t, bal, "inferrail_balancer_ejections_total", `replica="replica-0"`)
	stRecord(t, stRow{Row: "05-flap", Fault: "1 of 3 engines flaps between healthy and 503 every 100 ms for 10 s",
		Result: fmt.Sprintf("%d of %d requests failed; it answered %.1f%% of them (a third when healthy), ejected %.0f times; %d retries on a 503",
			during.lostBeforeBegin+during.brokeAfterBegin, n, 100*share, ejections,
			int(btMetric(t, bal, "inferrail_balancer_retries_total", `reason="status_503"`))),
		Figures: map[string]any{"requests": n, "failed": during.lostBeforeBegin + during.brokeAfterBegin, "share": share,
			"ejections": ejections, "flaps": flaps}})
	if m := during.lostBeforeBegin + during.brokeAfterBegin; m > 0 {
		t.Errorf("%d requests failed with a flapping engine: %v", m, during.errs)
	}
}

// TestStressGarbageEngine: one of three engines answers 200 with a body that
// is neither JSON nor an event stream for 10 s. The router does not read
// answer bodies, so the clients routed there get the garbage; every other
// request succeeds, and every node keeps running and stays healthy.
func TestStressGarbageEngine(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-g"}, "--zero-latency")
	bal := f.bals[0]
	load := stStartLoad(t, []string{bal.url}, 64, 500, stMix("garbage"))
	load.waitDone(t, 1000)
	at := time.Now()
	stFault(t, f.sims[0], `{"kind":"garbage","duration":"10s","path":"/v1/"}`)
	end := at.Add(10 * time.Second)
	scWait(t, "the garbage fault to end", func() error {
		if time.Now().Before(end) {
			return fmt.Errorf("%v left", time.Until(end))
		}
		return nil
	})
	load.waitDone(t, 500)
	load.stop()
	during := stCount(load.done(), func(o stOutcome) bool { return o.start.After(at) && o.end.Before(end) })
	garbage, other := 0, 0
	for _, o := range load.done() {
		if o.start.After(at) && o.end.Before(end) && o.err != nil {
			if o.begun && o.replica == "replica-0" {
				garbage++
			} else {
				other++
			}
		}
	}
	for _, p := range []*scProc{f.sims[0].proc, f.sidecars[0].proc, bal.proc} {
		select {
		case <-p.done:
			t.Errorf("%s exited: %v", p.name, p.err)
		default:
		}
	}
	healthy := bal.replicasHealthy(3) == nil
	stRecord(t, stRow{Row: "06-garbage", Fault: "1 of 3 engines answers 200 with garbage (not JSON, not SSE) for 10 s",
		Result: fmt.Sprintf("%d of %d answers were its garbage, passed through as they came (bodies are not validated); %d other requests failed; every node kept running (all replicas healthy: %v)",
			garbage, during.ok+during.lostBeforeBegin+during.brokeAfterBegin, other, healthy),
		Figures: map[string]any{"requests": during.ok + during.lostBeforeBegin + during.brokeAfterBegin, "garbage": garbage,
			"other_failed": other, "all_healthy": healthy}})
	if other > 0 {
		t.Errorf("%d requests not routed to the garbage engine failed: %v", other, during.errs)
	}
	if !healthy {
		t.Error("not every replica is healthy after the garbage fault")
	}
}
