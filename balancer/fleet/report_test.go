package fleet

import (
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/load"
)

// A response's load report is used as the sidecar wrote it, with this
// balancer's share beside it, and is stale once older than the gossip's
// load_max_age (Config.LoadMaxAge), the rule the gossip applies to its
// announcements.
func TestResponseReportStaleAfterLoadMaxAge(t *testing.T) {
	f, clk := newTestFleet(t, []Spec{spec("a", "m")}, func(c *Config) { c.LoadMaxAge = 1500 * time.Millisecond })
	set := f.Snapshot().Models["m"]
	rep := load.Report{Running: 3, InFlight: 5, Pending: 2, PrefillTokens: 900}
	own := load.Share{Origin: "me", InFlight: 1, Pending: 1, PrefillTokens: 100}
	set.Replicas[0].ObserveReport(rep, own, clk.now())

	c := set.Candidates(clk.now(), nil)[0]
	if !c.Load.Known || c.Load.Stale || c.Load.Report.Running != 3 || c.Load.Own != own {
		t.Fatalf("fresh report: %+v", c.Load)
	}
	clk.add(1500 * time.Millisecond)
	if c := set.Candidates(clk.now(), nil)[0]; c.Load.Stale {
		t.Errorf("a report exactly load_max_age old is stale")
	}
	clk.add(time.Millisecond)
	if c := set.Candidates(clk.now(), nil)[0]; !c.Load.Known || !c.Load.Stale {
		t.Errorf("a report older than load_max_age: %+v, want known and stale", c.Load)
	}
}

// Without a limit the fleet takes the gossip's default (1s).
func TestLoadMaxAgeDefaultsToTheGossips(t *testing.T) {
	f, _ := newTestFleet(t, []Spec{spec("a", "m")}, nil)
	if f.cfg.LoadMaxAge != time.Second {
		t.Errorf("LoadMaxAge = %v, want the gossip's 1s", f.cfg.LoadMaxAge)
	}
}
