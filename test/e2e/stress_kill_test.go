//go:build stress

package e2e

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// stTargetRate is the load the kill rows aim at; the rate reached on the
// machine is recorded with each row.
const stTargetRate = 1000

// stKillAndRestart kills one replica's engine or sidecar (kill -9) under load,
// waits until the balancer stops routing to it, restarts it and waits until it
// serves again. Requests whose answer had not begun must all succeed.
func stKillAndRestart(t *testing.T, row, what string) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-s"}, "--zero-latency")
	bal := f.bals[0]
	load := stStartLoad(t, []string{bal.url}, 64, stTargetRate, stMix(what))
	load.waitDone(t, 2000)

	victim := f.sims[1].proc
	if what == "sidecar" {
		victim = f.sidecars[1].proc
	}
	killedAt := time.Now()
	victim.kill(syscall.SIGKILL)
	out := stOut(t, bal, "replica-1")
	var gone time.Duration // a killed sidecar leaves the gossip view
	if what == "sidecar" {
		gone = stSince(t, "replica-1 to leave the view", func() error {
			if st, err := stReplicaState(bal, "replica-1"); err != nil || (st != "" && st != "gone") {
				return fmt.Errorf("state %q, %v", st, err)
			}
			return nil
		}) + out
	}
	load.waitDone(t, 2000)

	again := stRestart(t, victim)
	restartedAt := time.Now()
	if what == "sidecar" {
		f.sidecars[1].proc = again
	} else {
		f.sims[1].proc = again
		stWaitHealthy(t, "the restarted engine", f.sims[1].url)
	}
	readmit := stSince(t, "replica-1 to serve again", func() error {
		for _, o := range load.done() {
			if o.start.After(restartedAt) && o.replica == "replica-1" && o.err == nil {
				return nil
			}
		}
		return errors.New("no answer from replica-1 since the restart")
	})
	load.waitDone(t, 1000)
	load.stop()

	all := stCount(load.done(), nil)
	afterKill := stCount(load.done(), func(o stOutcome) bool { return o.start.After(killedAt) })
	stRecord(t, stRow{Row: row, Fault: fmt.Sprintf("%s of 1 of 3 replicas killed (kill -9) under load, then restarted", what),
		Result: fmt.Sprintf("%d of %d requests whose answer had not begun failed; %d broke mid-answer; no traffic to it after %d ms; serving again %d ms after the restart; %.0f req/s reached (target %d)",
			all.lostBeforeBegin, all.ok+all.lostBeforeBegin, all.brokeAfterBegin, ms(out), ms(readmit), all.rate(), stTargetRate),
		Figures: map[string]any{"requests": all.ok + all.lostBeforeBegin + all.brokeAfterBegin, "lost_before_begin": all.lostBeforeBegin,
			"broke_after_begin": all.brokeAfterBegin, "out_ms": ms(out), "left_view_ms": ms(gone), "readmit_ms": ms(readmit),
			"rate": int(all.rate()), "target_rate": stTargetRate, "after_kill": afterKill.ok + afterKill.lostBeforeBegin,
			"retries": btMetric(t, bal, "inferrail_balancer_retries_total", "")}})
	if all.lostBeforeBegin > 0 {
		t.Errorf("%d requests failed before their answer began: %v", all.lostBeforeBegin, all.errs)
	}
}

// TestStressEngineKill: the engine of one replica is killed and restarted.
func TestStressEngineKill(t *testing.T) { stKillAndRestart(t, "01-engine-kill", "engine") }

// TestStressSidecarKill: the sidecar of one replica is killed and restarted.
func TestStressSidecarKill(t *testing.T) { stKillAndRestart(t, "02-sidecar-kill", "sidecar") }

// TestStressBalancerKill: two balancers share the fleet; clients fail over
// on refused connections and resend on a reset before any answer byte, as
// behind a cloud load balancer. One balancer is killed (kill -9): requests
// it was answering may break, no later one fails.
func TestStressBalancerKill(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-a", "bal-b"}, "--zero-latency")
	// The client is a cloud load balancer: it moves a request whose
	// connection is refused to the other balancer, and sends again one whose
	// kept-alive connection to the killed balancer was closed or reset before
	// any answer byte. Without the second, a request written onto a pooled
	// connection in the moment between the kill and the client reading its
	// close fails with EOF (4 of 3,029 in one run): the killed process never
	// read it, and no router can answer it.
	load := stStartLoadOpts(t, []string{f.bals[0].url, f.bals[1].url}, 64, stTargetRate, true, stMix("bal"))
	load.waitDone(t, 2000)
	f.bals[0].proc.kill(syscall.SIGKILL) // returns once the process is gone
	killedAt := time.Now()
	load.waitDone(t, 3000)
	load.stop()

	inFlight := stCount(load.done(), func(o stOutcome) bool { return !o.start.After(killedAt) && o.end.After(killedAt) })
	after := stCount(load.done(), func(o stOutcome) bool { return o.start.After(killedAt) })
	all := stCount(load.done(), nil)
	stRecord(t, stRow{Row: "03-balancer-kill", Fault: "1 of 2 balancers killed (kill -9) under load; the client moves to the other on refused connections and resends a request whose kept-alive connection closed before any answer byte",
		Result: fmt.Sprintf("%d requests in flight on it broke; 0 of %d later requests may fail: %d failed (%d moved over on a refused connection); %.0f req/s reached",
			inFlight.lostBeforeBegin+inFlight.brokeAfterBegin, after.ok+after.lostBeforeBegin+after.brokeAfterBegin,
			after.lostBeforeBegin+after.brokeAfterBegin, after.failovers, all.rate()),
		Figures: map[string]any{"in_flight_broken": inFlight.lostBeforeBegin + inFlight.brokeAfterBegin,
			"after": after.ok + after.lostBeforeBegin + after.brokeAfterBegin, "after_failed": after.lostBeforeBegin + after.brokeAfterBegin,
			"failovers": after.failovers, "rate": int(all.rate())}})
	if n := after.lostBeforeBegin + after.brokeAfterBegin; n > 0 {
		t.Errorf("%d requests sent after the kill failed: %v", n, after.errs)
	}
}
