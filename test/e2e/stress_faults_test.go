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
// is neither JSON nor an event stream (the simulator's garbage fault: a body
// starting "\x00\xff" under application/json) for 10 s. The balancer checks
// an answer's first bytes before any goes to the client: the garbage never
// reaches a client, every request moves to another replica and succeeds, and
// the garbage replica is ejected as after 5xx answers (failure_threshold 3).
func TestStressGarbageEngine(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-g"}, "--zero-latency")
	bal := f.bals[0]
	load := stStartLoad(t, []string{bal.url}, 64, 500, stMix("garbage"))
	load.waitDone(t, 1000)
	at := time.Now()
	stFault(t, f.sims[0], `{"kind":"garbage","duration":"10s","path":"/v1/"}`)
	end := at.Add(10 * time.Second)
	out := stSince(t, "replica-0 ejected", func() error {
		if n := btMetric(t, bal, "inferrail_balancer_ejections_total", `replica="replica-0"`); n < 1 {
			return fmt.Errorf("%v ejections", n)
		}
		return nil
	})
	scWait(t, "the garbage fault to end", func() error {
		if time.Now().Before(end) {
			return fmt.Errorf("%v left", time.Until(end))
		}
		return nil
	})
	load.waitDone(t, 500)
	load.stop()
	during := stCount(load.done(), func(o stOutcome) bool { return o.start.After(at) && o.end.Before(end) })
	all := stCount(load.done(), nil)
	garbage, other := 0, 0
	for _, o := range load.done() {
		if o.err == nil {
			continue
		}
		if o.begun && o.replica == "replica-0" {
			garbage++
		} else {
			other++
		}
	}
	for _, p := range []*scProc{f.sims[0].proc, f.sidecars[0].proc, bal.proc} {
		select {
		case <-p.done:
			t.Errorf("%s exited: %v", p.name, p.err)
		default:
		}
	}
	ejections := btMetric(t, bal, "inferrail_balancer_ejections_total", `replica="replica-0"`)
	moved := btMetric(t, bal, "inferrail_balancer_retries_total", `reason="malformed"`)
	n := during.ok + during.lostBeforeBegin + during.brokeAfterBegin
	stRecord(t, stRow{Row: "06-garbage", Fault: "1 of 3 engines answers 200 with garbage (not JSON, not SSE) for 10 s",
		Result: fmt.Sprintf("0 garbage answers may reach a client: %d did, of %d requests during the fault (%d failed otherwise, %d in the whole run); ejected %d ms after the fault began, %.0f times in all; %.0f answers moved on as malformed before their first byte",
			garbage, n, other, all.lostBeforeBegin+all.brokeAfterBegin, ms(out), ejections, moved),
		Figures: map[string]any{"requests": n, "garbage": garbage, "other_failed": other, "ejected_ms": ms(out),
			"ejections": ejections, "malformed_retries": moved}})
	if garbage > 0 || other > 0 {
		t.Errorf("%d garbage answers reached clients and %d other requests failed: %v", garbage, other, all.errs)
	}
	if moved == 0 {
		t.Error("no answer was retried as malformed: the garbage replica got no requests")
	}
}
