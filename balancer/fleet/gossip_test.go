package fleet

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/gossip/gossiptest"
	"github.com/inferrail/inferrail/internal/load"
)

// TestReplicasFromGossip runs two sidecars and a balancer on the in-memory
// gossip: the fleet lists the sidecars with their data address over h2c and
// their load, keeps static replicas, and drops a sidecar that fails.
func TestReplicasFromGossip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := gossiptest.Start(t, gossiptest.Options{Sidecars: 2, Balancers: 1,
			Configure: func(i int, cfg *gossip.Config) {
				if cfg.Role == gossip.RoleSidecar {
					cfg.Meta.Models = []string{"m"}
					cfg.Meta.DataAddr = fmt.Sprintf("10.0.0.%d:8100", i+1)
				}
			}})
		c.Nodes[0].SetLoad(load.Report{Running: 3, Waiting: 2, InFlight: 5, KVUsage: 0.5})
		f, err := New(Config{Static: []Spec{spec("static", "m")}, Health: DefaultHealthConfig()},
			c.Nodes[2].Peers(), nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = f.Run(ctx) }()

		ids := func() []string {
			var out []string
			for _, r := range f.Snapshot().Replicas {
				out = append(out, r.ID)
			}
			return out
		}
		waitUntil := func(what string, cond func() bool) {
			t.Helper()
			for range 600 {
				if cond() {
					return
				}
				time.Sleep(100 * time.Millisecond) // fake time inside the bubble
			}
			t.Fatalf("never: %s", what)
		}
		waitUntil("both sidecars listed", func() bool { return len(ids()) == 3 })
		if diff := cmp.Diff([]string{"sidecar-0", "sidecar-1", "static"}, ids()); diff != "" {
			t.Errorf("replicas (-want +got):\n%s", diff)
		}
		r := f.Snapshot().Replica("sidecar-0")
		if !r.H2C || r.URL.String() != "http://10.0.0.1:8100" || r.Static {
			t.Errorf("sidecar replica = %+v", r.Spec)
		}
		set := f.Snapshot().Models["m"]
		waitUntil("load received", func() bool {
			cands := set.Candidates(time.Now(), nil)
			return cands[0].Load.Known && !cands[0].Load.Stale
		})
		cands := set.Candidates(time.Now(), nil)
		if got := cands[0].Load; got.Running != 3 || got.Waiting != 2 || got.InFlight != 5 || got.KVUsage != 0.5 {
			t.Errorf("candidate load = %+v", got)
		}
		if cands[2].Own != &f.Snapshot().Replica("static").Counters {
			t.Error("candidate does not share the replica's counters")
		}

		down := f.Snapshot().Replica("sidecar-1").Down()
		c.Kill(1)
		waitUntil("the failed sidecar dropped", func() bool { return len(ids()) == 2 })
		if down.Err() == nil {
			t.Error("the failed sidecar's Down context is not cancelled")
		}
		// The surviving replica keeps its identity (and counters).
		if f.Snapshot().Replica("sidecar-0") != r {
			t.Error("sidecar-0 was replaced by a membership change")
		}
		cancel()
		c.Stop()
	})
}
