package gossiptest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/inferrail/inferrail/gossip"
	"github.com/prometheus/client_golang/prometheus"
)

// Options describe a cluster to start.
type Options struct {
	Sidecars, Balancers, Observers int
	// Configure, when set, edits each node's config before it is created;
	// i is the node's index in Cluster.Nodes.
	Configure func(i int, cfg *gossip.Config)
	// Log receives every node's logs (nil: discarded).
	Log *slog.Logger
	// StartInterval spaces node starts (default 0: all at once). Large
	// clusters converge much sooner when nodes arrive one by one, as they do
	// in a real rollout.
	StartInterval time.Duration
	// Registerer, when set, returns the registerer for node i's metrics.
	Registerer func(i int) prometheus.Registerer
}

// Cluster is a set of nodes on one in-memory Network. Nodes are ordered
// sidecars, then balancers, then observers, named sidecar-0, balancer-0,
// observer-0 and so on; every node but the first joins the first.
type Cluster struct {
	Network    *Network
	Nodes      []*gossip.Node
	Transports []*Transport

	mu      sync.Mutex // protects cancels and stopped
	cancels []context.CancelFunc
	stopped bool
	wg      sync.WaitGroup
}

// Config returns the config Start uses for node i before Configure: the
// local timing profile on the in-memory transport.
func Config(name string, role gossip.Role, tr *Transport) gossip.Config {
	cfg := gossip.DefaultConfig()
	cfg.NodeName = name
	cfg.Role = role
	cfg.Profile = gossip.ProfileLocal
	cfg.Transport = tr
	cfg.BindPort = 0
	cfg.Meta = gossip.Meta{Engine: "sim", BlockSize: 16, Version: "test"}
	return cfg
}

// Start creates and runs the nodes; they stop (leaving) when the test ends.
// Inside testing/synctest, call it from the bubble.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	c := &Cluster{Network: NewNetwork()}
	type spec struct {
		role  gossip.Role
		count int
	}
	i := 0
	for _, s := range []spec{{gossip.RoleSidecar, opts.Sidecars}, {gossip.RoleBalancer, opts.Balancers}, {gossip.RoleObserver, opts.Observers}} {
		for k := range s.count {
			tr := c.Network.NewTransport()
			cfg := Config(fmt.Sprintf("%s-%d", s.role, k), s.role, tr)
			if i > 0 {
				cfg.Join = []string{c.Transports[0].Addr()}
			}
			if opts.Configure != nil {
				opts.Configure(i, &cfg)
			}
			var reg prometheus.Registerer
			if opts.Registerer != nil {
				reg = opts.Registerer(i)
			}
			n, err := gossip.New(cfg, opts.Log, reg)
			if err != nil {
				tb.Fatalf("gossiptest: node %d: %v", i, err)
			}
			c.Nodes = append(c.Nodes, n)
			c.Transports = append(c.Transports, tr)
			i++
		}
	}
	for i, n := range c.Nodes {
		if i > 0 && opts.StartInterval > 0 {
			t := time.NewTimer(opts.StartInterval)
			<-t.C
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.cancels = append(c.cancels, cancel)
		c.wg.Go(func() {
			if err := n.Run(ctx); err != nil {
				tb.Errorf("gossiptest: %s: Run: %v", n.Name(), err)
			}
		})
	}
	tb.Cleanup(c.Stop)
	return c
}

// Linger is how long Stop waits after the nodes stopped for memberlist's
// background work (a probe awaiting its timeout, a stream being read) to end,
// so a synctest bubble has no goroutine left when the test returns. Outside
// synctest this is real time.
const Linger = 5 * time.Second

// Stop stops every node (each leaves first), waits for them, then waits
// Linger. It is idempotent and registered as a test cleanup by Start.
func (c *Cluster) Stop() {
	c.mu.Lock()
	stopped := c.stopped
	c.stopped = true
	for _, cancel := range c.cancels {
		cancel()
	}
	c.mu.Unlock()
	c.wg.Wait()
	if !stopped {
		t := time.NewTimer(Linger)
		<-t.C
	}
}

// Leave stops node i gracefully: it leaves, then shuts down.
func (c *Cluster) Leave(i int) {
	c.mu.Lock()
	c.cancels[i]()
	c.mu.Unlock()
}

// Kill stops node i as a crash would: it vanishes from the network without
// leaving.
func (c *Cluster) Kill(i int) {
	c.Transports[i].Kill()
	_ = c.Nodes[i].Shutdown()
}

// Converged reports whether every running node sees every running node alive
// with its metadata.
func (c *Cluster) Converged() bool {
	var alive []string
	for i, t := range c.Transports {
		if !t.Down() {
			alive = append(alive, c.Nodes[i].Name())
		}
	}
	for i, n := range c.Nodes {
		if c.Transports[i].Down() {
			continue
		}
		s := n.Peers().View()
		for _, name := range alive {
			m := s.Member(name)
			if m == nil || m.Status != gossip.StatusAlive || m.Meta.Role == 0 {
				return false
			}
		}
	}
	return true
}

// WaitFor polls cond every step until it holds or within elapses, and
// reports whether it held. Inside synctest the waiting is fake time.
func WaitFor(within, step time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		t := time.NewTimer(step)
		<-t.C
	}
}
