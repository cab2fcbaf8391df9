package gossip_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/gossip/gossiptest"
)

// TestPlacementsReachTheOtherBalancers: a balancer's placements reach every
// other balancer's handler with the sender's name, and no sidecar or
// observer; a sidecar cannot send any, nor can a body over the bound go out.
func TestPlacementsReachTheOtherBalancers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := gossiptest.Start(t, gossiptest.Options{Sidecars: 1, Balancers: 3, Observers: 1})
		if !gossiptest.WaitFor(10*time.Second, 50*time.Millisecond, c.Converged) {
			t.Fatal("cluster did not converge")
		}
		type got struct{ from, body string }
		var mu sync.Mutex
		seen := map[string][]got{}
		for _, n := range c.Nodes {
			n.SetPlacementHandler(func(from string, body []byte, _ time.Time) error {
				mu.Lock()
				seen[n.Name()] = append(seen[n.Name()], got{from, string(body)})
				mu.Unlock()
				return nil
			})
		}
		bals := c.Nodes[1:4]
		if err := bals[0].SendPlacements([]byte("placed")); err != nil {
			t.Fatal(err)
		}
		if err := c.Nodes[0].SendPlacements([]byte("x")); err == nil || !strings.Contains(err.Error(), "only a balancer") {
			t.Errorf("a sidecar sent placements: err %v", err)
		}
		if err := bals[1].SendPlacements(bytes.Repeat([]byte{1}, gossip.MaxPlacementsBytes+1)); err == nil {
			t.Error("a body over MaxPlacementsBytes went out")
		}
		arrived := func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen[bals[1].Name()]) == 1 && len(seen[bals[2].Name()]) == 1
		}
		if !gossiptest.WaitFor(2*time.Second, 5*time.Millisecond, arrived) {
			t.Fatalf("placements did not reach both other balancers: %v", seen)
		}
		time.Sleep(500 * time.Millisecond) // anything else in flight lands
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bals[1:] {
			if g := seen[b.Name()]; g[0] != (got{bals[0].Name(), "placed"}) {
				t.Errorf("%s got %+v", b.Name(), g)
			}
		}
		for _, n := range []*gossip.Node{c.Nodes[0], c.Nodes[4], bals[0]} {
			if g := seen[n.Name()]; len(g) != 0 {
				t.Errorf("%s (a %s) got placements %+v", n.Name(), n.Meta().Role, g)
			}
		}
	})
}

// TestLoadReachesTheOtherBalancers: a balancer's load goes to the other
// balancers' load handler, never to their placement handler, and only a
// balancer sends it.
func TestLoadReachesTheOtherBalancers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := gossiptest.Start(t, gossiptest.Options{Sidecars: 1, Balancers: 2})
		if !gossiptest.WaitFor(10*time.Second, 50*time.Millisecond, c.Converged) {
			t.Fatal("cluster did not converge")
		}
		var mu sync.Mutex
		var loads, placements []string
		b0, b1 := c.Nodes[1], c.Nodes[2]
		if got := b0.OtherBalancers(); got != 1 {
			t.Errorf("OtherBalancers() = %d with one other balancer, want 1", got)
		}
		b1.SetLoadHandler(func(from string, body []byte, _ time.Time) error {
			mu.Lock()
			defer mu.Unlock()
			loads = append(loads, from+":"+string(body))
			return nil
		})
		b1.SetPlacementHandler(func(from string, body []byte, _ time.Time) error {
			mu.Lock()
			defer mu.Unlock()
			placements = append(placements, from+":"+string(body))
			return nil
		})
		if err := b0.SendLoad([]byte("load")); err != nil {
			t.Fatal(err)
		}
		if err := c.Nodes[0].SendLoad([]byte("x")); err == nil || !strings.Contains(err.Error(), "only a balancer") {
			t.Errorf("a sidecar sent load: err %v", err)
		}
		if err := b0.SendLoad(bytes.Repeat([]byte{1}, gossip.MaxPlacementsBytes+1)); err == nil {
			t.Error("a body over MaxPlacementsBytes went out")
		}
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		if len(loads) != 1 || loads[0] != b0.Name()+":load" || len(placements) != 0 {
			t.Errorf("load handler got %q, placement handler %q", loads, placements)
		}
	})
}
