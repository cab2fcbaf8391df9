//go:build stress

package e2e

import (
	"errors"
	"fmt"
	"testing"
)

// TestStressKVEvents: a sidecar follows an engine's KV events through a gap
// in the sequence (batches the engine numbered but did not send live), a
// dropped event connection (cut while traffic goes on) and an engine restart
// that starts the sequence again at 0. After each, the sidecar's exact block
// set (its /debug/blocks state endpoint) equals the engine's cache (the
// simulator's /inferrail/debug/kv_cache) and its summary is complete.
func TestStressKVEvents(t *testing.T) {
	bin := scBuild(t)
	sim := scStartSim(t, bin, scFreePort(t), scFreePort(t), scFreePort(t))
	fwd := scStartForwarder(t, fmt.Sprintf("127.0.0.1:%d", sim.pub))
	sc := scStartSidecar(t, bin, sim.url, fwd.port(), sim.replay)
	scTraffic(t, sc, "warm", 20)
	scWait(t, "convergence before the faults", func() error { return scConverged(sim, sc) })
	replays := func() float64 { return scMetric(t, sc, "inferrail_sidecar_kvevents_replays_total", `result="ok"`) }

	r0 := replays()
	stFault(t, sim, `{"kind":"kv_gap","count":5}`)
	scTraffic(t, sc, "gap", 20)
	gap := stSince(t, "convergence after the gap", func() error { return scConverged(sim, sc) })
	gapReplays := replays() - r0

	r1 := replays()
	fwd.cut(true)
	scTraffic(t, sc, "cut", 20)
	fwd.resume()
	scWait(t, "the event connection to come back", func() error {
		if scMetric(t, sc, "inferrail_sidecar_kvevents_connected", "") < 1 {
			return errors.New("not connected")
		}
		return nil
	})
	scTraffic(t, sc, "after-cut", 5)
	cut := stSince(t, "convergence after the dropped connection", func() error { return scConverged(sim, sc) })
	cutReplays := replays() - r1

	stFault(t, sim, `{"kind":"restart"}`)
	scTraffic(t, sc, "restart", 20)
	restart := stSince(t, "convergence after the engine restart", func() error { return scConverged(sim, sc) })
	want, err := sim.cache()
	if err != nil {
		t.Fatal(err)
	}
	lost := scMetric(t, sc, "inferrail_sidecar_kvevents_lost_total", "")
	stRecord(t, stRow{Row: "08-kv-events", Fault: "KV events: a gap of 5 batches, the event connection dropped during 20 requests, an engine restart with the sequence reset",
		Result: fmt.Sprintf("the sidecar's block set and summary equal the engine's cache after each (%d blocks at the end), %d ms, %d ms and %d ms after the last request; %v replays filled the gap, %v the cut; %v gaps left unrecovered",
			len(want), ms(gap), ms(cut), ms(restart), gapReplays, cutReplays, lost),
		Figures: map[string]any{"gap_ms": ms(gap), "cut_ms": ms(cut), "restart_ms": ms(restart), "blocks": len(want),
			"gap_replays": gapReplays, "cut_replays": cutReplays, "lost": lost}})
	if gapReplays < 1 {
		t.Errorf("the gap was not replayed (%v replays)", gapReplays)
	}
	if lost != 0 {
		t.Errorf("%v gaps unrecovered", lost)
	}
}
