package route

import (
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/load"
)

// The load model takes this balancer's share, as the sidecar counted it, out
// of the report's counts, never below zero, and counts the engine's waiting
// requests the sidecar does not proxy as unseen.
func TestLoadOthersAndUnseen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		l      Load
		others Work
		unseen int
	}{
		{name: "others are the report less this balancer's share",
			l: Load{Report: load.Report{InFlight: 9, Pending: 4, PrefillTokens: 12000, Waiting: 4},
				Own: load.Share{InFlight: 2, Pending: 1, PrefillTokens: 2000}},
			others: Work{InFlight: 7, Pending: 3, PrefillTokens: 10000}},
		{name: "a share larger than the totals leaves nothing",
			l:      Load{Report: load.Report{InFlight: 1}, Own: load.Share{InFlight: 3, Pending: 2, PrefillTokens: 5}},
			others: Work{}},
		{name: "engine waiting past the sidecar's pending is unseen",
			l:      Load{Report: load.Report{InFlight: 2, Pending: 2, Waiting: 5}},
			others: Work{InFlight: 2, Pending: 2}, unseen: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.l.Others(); got != tc.others {
				t.Errorf("Others() = %+v, want %+v", got, tc.others)
			}
			if got := tc.l.Unseen(); got != tc.unseen {
				t.Errorf("Unseen() = %d, want %d", got, tc.unseen)
			}
		})
	}
}

// Where other balancers send their own counts (Load.HasPeers), the load
// model counts them in place of their shares in the report, adds what the
// report holds beyond them (Residual), and still the engine's unseen
// waiting requests; the step under way is the latest any of them saw. The
// peers' baselines ignore the peers' counts, as their routers do.
func TestWorkCountsPeersOnce(t *testing.T) {
	c := cands(1)[0]
	lease(c.Own, 100)
	c.Own.OutputReserve.Add(64)
	step := t0.Add(-20 * time.Millisecond)
	c.Load = Load{Known: true, Exact: true,
		// 3 other requests in the report, 2 of them a peer's as the report saw them.
		Report:   load.Report{InFlight: 4, Pending: 3, PrefillTokens: 350, Waiting: 4},
		Own:      load.Share{InFlight: 1, Pending: 1, PrefillTokens: 100},
		HasPeers: true,
		// The peer's requests now: 3, one sent after the report.
		Peers:    Work{InFlight: 3, Pending: 2, PrefillTokens: 400, StepTokens: 150, StepStart: step, OutputReserve: 90},
		Residual: Work{InFlight: 1, Pending: 1, PrefillTokens: 50},
	}
	now := t0.Add(time.Millisecond)
	got := WorkOf(newPolicy(t, PolicyCostModel, nil), &c, now)
	// own 1 + peers 3 + residual 1 + unseen 1 (waiting 4, pending 3).
	want := Work{InFlight: 6, Pending: 5, PrefillTokens: 100 + 400 + 50 + 2048, StepTokens: 150, StepStart: step,
		OutputReserve: 64 + 90 + 2*256}
	if got != want {
		t.Errorf("WorkOf(cost_model) = %+v, want %+v", got, want)
	}
	// A stale report: own and peers only (the peers' counts have their own age).
	stale := c
	stale.Load.Stale = true
	if got, want := WorkOf(newPolicy(t, PolicyCostModel, nil), &stale, now), (Work{InFlight: 4, Pending: 3,
		PrefillTokens: 500, StepTokens: 150, StepStart: step, OutputReserve: 154}); got != want {
		t.Errorf("stale report: WorkOf = %+v, want %+v", got, want)
	}
	// A baseline reads the report's others, as without peers.
	if got, want := WorkOf(newPolicy(t, PolicyDynamoKV, nil), &c, now), (Work{InFlight: 5, Pending: 4,
		PrefillTokens: 100 + 250 + 2048, OutputReserve: 64 + 4*256}); got != want {
		t.Errorf("WorkOf(dynamo_kv) = %+v, want %+v", got, want)
	}
}
