package gossip

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDefaultNodeNameIsPerPort(t *testing.T) {
	a, b := DefaultNodeName(7946), DefaultNodeName(7947)
	if a == b || !strings.HasSuffix(a, "-7946") {
		t.Fatalf("names %q and %q, want distinct names ending in their ports", a, b)
	}
	if x, y := DefaultNodeName(0), DefaultNodeName(0); x == y {
		t.Fatalf("two random default names are both %q", x)
	}
	cfg := DefaultConfig()
	cfg.Role, cfg.BindAddr, cfg.BindPort = RoleSidecar, "127.0.0.1", 0
	n, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	if n.Name() == "" || n.Name() != n.ml.LocalNode().Name {
		t.Fatalf("node named %q, memberlist %q", n.Name(), n.ml.LocalNode().Name)
	}
}

// TestNameConflictRefusesToJoin: a node whose name the cluster already has
// stops with ErrNameConflict instead of staying alone, and the member that
// owns the name stays in the view at its own address.
func TestNameConflictRefusesToJoin(t *testing.T) {
	bal := socketNode(t, "bal", RoleBalancer, nil, "")
	first := socketNode(t, "dup", RoleSidecar, nil, "", bal.Addr())
	if !waitFor(t, 10*time.Second, func() bool { return sees(bal, "dup") && sees(first, "bal") }) {
		t.Fatal("the first node did not join")
	}
	cfg := DefaultConfig()
	cfg.NodeName, cfg.Role = "dup", RoleSidecar
	cfg.BindAddr, cfg.BindPort, cfg.Profile = "127.0.0.1", 0, ProfileLocal
	cfg.Join = []string{bal.Addr()}
	second, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- second.Run(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNameConflict) || !strings.Contains(err.Error(), first.Addr()) {
			t.Fatalf("Run returned %v, want a name conflict naming %s", err, first.Addr())
		}
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the node with a taken name kept running")
	}
	m := bal.Peers().View().Member("dup")
	if m == nil || m.Status != StatusAlive || m.ml.Address() != first.Addr() {
		t.Fatalf("the balancer's view of dup: %+v, want alive at %s", m, first.Addr())
	}
}
