package gossip_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/gossip/gossiptest"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
)

func newBuilder(t *testing.T) *summary.Builder {
	t.Helper()
	b, err := summary.NewBuilder(summary.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClusterConvergesAndDisseminates: 3 sidecars and 2 balancers converge,
// every balancer gets every sidecar's load and summary, a killed sidecar is
// declared dead within the suspicion bound and its summary dropped.
func TestClusterConvergesAndDisseminates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := gossiptest.Start(t, gossiptest.Options{Sidecars: 3, Balancers: 2})
		if !gossiptest.WaitFor(10*time.Second, 50*time.Millisecond, c.Converged) {
			t.Fatal("cluster did not converge in 10s")
		}
		builders := make([]*summary.Builder, 3)
		for i := range 3 {
			builders[i] = newBuilder(t)
			for h := range kvblock.Hash(100) {
				builders[i].Add(kvblock.Hash(i)<<32|h, summary.MediumGPU)
			}
			c.Nodes[i].SetSummarySource(builders[i])
			c.Nodes[i].SetLoad(load.Report{Running: int64(i + 1), KVUsage: 0.5})
		}
		balancers := c.Nodes[3:]
		holds := func(b *gossip.Node, sidecar int, h kvblock.Hash) bool {
			now := time.Now()
			m := b.Peers().View().Member(c.Nodes[sidecar].Name())
			if m == nil {
				return false
			}
			v, fresh := m.Summary(now)
			lr, loadFresh, ok := m.Load(now)
			return fresh && loadFresh && ok && lr.Load.Running == int64(sidecar+1) && v.Contains(h, summary.MediumGPU)
		}
		everywhere := func(h func(i int) kvblock.Hash) func() bool {
			return func() bool {
				for _, b := range balancers {
					for i := range 3 {
						if !holds(b, i, h(i)) {
							return false
						}
					}
				}
				return true
			}
		}
		if !gossiptest.WaitFor(5*time.Second, 10*time.Millisecond, everywhere(func(i int) kvblock.Hash { return kvblock.Hash(i)<<32 | 99 })) {
			t.Fatal("balancers did not get every summary within 5s")
		}
		// New blocks arrive by delta within a few load intervals.
		start := time.Now()
		for i, b := range builders {
			b.Add(kvblock.Hash(i)<<32|1000, summary.MediumGPU)
		}
		if !gossiptest.WaitFor(time.Second, time.Millisecond, everywhere(func(i int) kvblock.Hash { return kvblock.Hash(i)<<32 | 1000 })) {
			t.Fatal("delta not applied within 1s")
		}
		if d := time.Since(start); d > 300*time.Millisecond {
			t.Errorf("delta took %v of fake time, want <= 300ms at a 100ms interval", d)
		}

		// Kill sidecar-2: it must be dead everywhere within the bound, its
		// summary dropped.
		cfg := gossiptest.Config("x", gossip.RoleSidecar, nil)
		bound := time.Duration(len(c.Nodes))*cfg.ProbeInterval() + cfg.SuspicionTimeout(len(c.Nodes)) + time.Second
		c.Kill(2)
		killed := time.Now()
		dead := func() bool {
			for i, n := range c.Nodes {
				if i == 2 {
					continue
				}
				m := n.Peers().View().Member("sidecar-2")
				if m == nil || m.Status != gossip.StatusDead {
					return false
				}
			}
			return true
		}
		if !gossiptest.WaitFor(2*bound, 10*time.Millisecond, dead) {
			t.Fatalf("sidecar-2 not dead everywhere within %v", 2*bound)
		}
		if d := time.Since(killed); d > bound {
			t.Errorf("detection took %v, bound %v", d, bound)
		} else {
			t.Logf("killed sidecar declared dead everywhere after %v (bound %v)", d, bound)
		}
		for _, b := range balancers {
			m := b.Peers().View().Member("sidecar-2")
			if v, fresh := m.Summary(time.Now()); fresh || v.Info().Valid {
				t.Errorf("%s still holds sidecar-2's summary", b.Name())
			}
			if _, fresh, _ := m.Load(time.Now()); fresh {
				t.Errorf("%s still trusts sidecar-2's load", b.Name())
			}
		}
	})
}

// TestLeaveIsGraceful: a node that stops leaves, and others mark it left.
func TestLeaveIsGraceful(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := gossiptest.Start(t, gossiptest.Options{Sidecars: 2, Balancers: 1})
		if !gossiptest.WaitFor(10*time.Second, 50*time.Millisecond, c.Converged) {
			t.Fatal("cluster did not converge")
		}
		c.Leave(1)
		left := func() bool {
			m := c.Nodes[2].Peers().View().Member("sidecar-1")
			return m != nil && m.Status == gossip.StatusLeft
		}
		if !gossiptest.WaitFor(5*time.Second, 10*time.Millisecond, left) {
			m := c.Nodes[2].Peers().View().Member("sidecar-1")
			t.Fatalf("sidecar-1 not marked left: %+v", m)
		}
	})
}

// TestStaleLoadAndResync: load goes stale when announcements stop, and a
// balancer whose view misses deltas resyncs from a snapshot.
func TestStaleLoadAndResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := gossiptest.Start(t, gossiptest.Options{Sidecars: 1, Balancers: 1})
		if !gossiptest.WaitFor(10*time.Second, 50*time.Millisecond, c.Converged) {
			t.Fatal("cluster did not converge")
		}
		b := newBuilder(t)
		c.Nodes[0].SetSummarySource(b)
		bal := c.Nodes[1]
		fresh := func(h kvblock.Hash) func() bool {
			return func() bool {
				m := bal.Peers().View().Member("sidecar-0")
				if m == nil {
					return false
				}
				v, ok := m.Summary(time.Now())
				return ok && v.Contains(h, summary.MediumGPU)
			}
		}
		b.Add(1, summary.MediumGPU)
		if !gossiptest.WaitFor(5*time.Second, 10*time.Millisecond, fresh(1)) {
			t.Fatal("summary never arrived")
		}
		// Lose deltas: take the balancer off the network for a while.
		c.Transports[1].Kill()
		for h := kvblock.Hash(2); h < 50; h++ {
			b.Add(h, summary.MediumGPU)
			time.Sleep(20 * time.Millisecond)
		}
		// Bring it back (the failure detector has not declared it dead yet
		// at the local profile's timings? it may have; either way it must
		// end up with every block).
		c.Transports[1].Revive()
		if !gossiptest.WaitFor(30*time.Second, 10*time.Millisecond, fresh(49)) {
			t.Fatal("balancer did not resync after losing deltas")
		}
		for h := kvblock.Hash(1); h < 50; h++ {
			if !fresh(h)() {
				t.Fatalf("block %d missing after resync", h)
			}
		}
		// Stop announcements: load and summary go stale.
		c.Kill(0)
		time.Sleep(2500 * time.Millisecond)
		m := bal.Peers().View().Member("sidecar-0")
		if _, fresh, _ := m.Load(time.Now()); fresh {
			t.Error("load still fresh 2.5s after the sidecar died")
		}
		if _, fresh := m.Summary(time.Now()); fresh {
			t.Error("summary still fresh 2.5s after the sidecar died")
		}
	})
}

// TestNewEpochReachesBalancers: a rebuild (new epoch, removed blocks dropped)
// reaches every balancer by snapshot, and deltas continue in the new epoch.
func TestNewEpochReachesBalancers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := gossiptest.Start(t, gossiptest.Options{Sidecars: 1, Balancers: 2})
		if !gossiptest.WaitFor(10*time.Second, 50*time.Millisecond, c.Converged) {
			t.Fatal("cluster did not converge")
		}
		b := newBuilder(t)
		for h := range kvblock.Hash(100) {
			b.Add(h, summary.MediumGPU)
		}
		c.Nodes[0].SetSummarySource(b)
		view := func(bal *gossip.Node) (*summary.View, bool) {
			m := bal.Peers().View().Member("sidecar-0")
			if m == nil {
				return nil, false
			}
			return m.Summary(time.Now())
		}
		state := func(want func(v *summary.View) bool) func() bool {
			return func() bool {
				for _, bal := range c.Nodes[1:] {
					v, fresh := view(bal)
					if !fresh || !want(v) {
						return false
					}
				}
				return true
			}
		}
		if !gossiptest.WaitFor(5*time.Second, 10*time.Millisecond, state(func(v *summary.View) bool { return v.Contains(99, summary.MediumGPU) })) {
			t.Fatal("first summary never arrived")
		}
		epoch0, _ := b.Version()
		for h := range kvblock.Hash(60) { // past the 25% removal threshold
			b.Remove(h, summary.MediumGPU)
		}
		b.Add(1000, summary.MediumGPU)
		newEpoch := func(v *summary.View) bool {
			in := v.Info()
			return in.Epoch > epoch0 && v.Contains(1000, summary.MediumGPU) && v.Contains(99, summary.MediumGPU) &&
				v.LongestPrefix([]kvblock.Hash{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, summary.MediumGPU) < 3
		}
		if !gossiptest.WaitFor(2*time.Second, 10*time.Millisecond, state(newEpoch)) {
			t.Fatal("new epoch did not reach every balancer within 2s")
		}
		b.Add(2000, summary.MediumGPU)
		if !gossiptest.WaitFor(time.Second, 10*time.Millisecond, state(func(v *summary.View) bool { return v.Contains(2000, summary.MediumGPU) })) {
			t.Fatal("delta after the new epoch not applied")
		}
		if m := c.Nodes[0].Meta(); m.SummaryEpoch <= epoch0 {
			t.Errorf("metadata epoch %d not updated past %d", m.SummaryEpoch, epoch0)
		}
	})
}

// TestJoinRetriesUntilSeedIsUp: a node whose seed is not running keeps
// retrying with backoff and joins once the seed comes up.
func TestJoinRetriesUntilSeedIsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := gossiptest.NewNetwork()
		trA, trSeed := nw.NewTransport(), nw.NewTransport()
		trSeed.Kill() // nothing listens at the seed's address yet
		cfgA := gossiptest.Config("a", gossip.RoleBalancer, trA)
		cfgA.Join = []string{trSeed.Addr()}
		a, err := gossip.New(cfgA, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = a.Run(ctx) }()

		time.Sleep(20 * time.Second) // several failed attempts
		if n := len(a.Peers().View().Members); n != 1 {
			t.Fatalf("a sees %d members before the seed is up", n)
		}
		trSeed.Revive()
		seed, err := gossip.New(gossiptest.Config("seed", gossip.RoleSidecar, trSeed), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		seedDone := make(chan struct{})
		go func() { defer close(seedDone); _ = seed.Run(ctx) }()
		joined := func() bool {
			m := a.Peers().View().Member("seed")
			return m != nil && m.Status == gossip.StatusAlive
		}
		// The backoff is capped at JoinRetryMax (30s).
		if !gossiptest.WaitFor(cfgA.JoinRetryMax+5*time.Second, 100*time.Millisecond, joined) {
			t.Fatal("a never joined the seed")
		}
		cancel()
		<-done
		<-seedDone
		time.Sleep(gossiptest.Linger)
	})
}
