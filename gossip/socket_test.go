package gossip

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
)

// socketNode starts a node on 127.0.0.1 with a free port and returns it with
// a stop function.
func socketNode(t *testing.T, name string, role Role, key []byte, label string, join ...string) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NodeName = name
	cfg.Role = role
	cfg.BindAddr = "127.0.0.1"
	cfg.BindPort = 0
	cfg.Profile = ProfileLocal
	cfg.SecretKey = key
	cfg.ClusterLabel = label
	cfg.Join = join
	cfg.JoinRetryMin = 50 * time.Millisecond
	cfg.JoinRetryMax = 200 * time.Millisecond
	n, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := n.Run(ctx); err != nil {
			t.Errorf("%s: Run: %v", name, err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return n
}

// waitFor polls cond on real time (sockets cannot run in a synctest bubble).
func waitFor(t *testing.T, within time.Duration, cond func() bool) bool {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
}

func sees(n *Node, name string) bool {
	m := n.Peers().View().Member(name)
	return m != nil && m.Status == StatusAlive
}

// TestSocketsEncryptionAndLabels runs real UDP/TCP on loopback: nodes with the
// key converge and exchange load; a node with another key, or another
// cluster label, cannot join, and its messages (encrypted with the wrong key,
// or in plain text) are not accepted.
func TestSocketsEncryptionAndLabels(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	bal := socketNode(t, "bal", RoleBalancer, key, "prod")
	side := socketNode(t, "side", RoleSidecar, key, "prod", bal.Addr())
	side.SetLoad(load.Report{Running: 7})
	if !waitFor(t, 10*time.Second, func() bool { return sees(bal, "side") && sees(side, "bal") }) {
		t.Fatal("nodes with the same key did not converge")
	}
	loadOf := func() (Announcement, bool) {
		m := bal.Peers().View().Member("side")
		if m == nil {
			return Announcement{}, false
		}
		lr, fresh, _ := m.Load(time.Now())
		return lr, fresh
	}
	if !waitFor(t, 5*time.Second, func() bool { lr, ok := loadOf(); return ok && lr.Load.Running == 7 }) {
		t.Fatal("balancer did not receive the sidecar's load over sockets")
	}

	// A 20,000-block summary (about 24 KB) crosses on the reliable path.
	b, err := summary.NewBuilder(summary.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for h := range kvblock.Hash(20000) {
		b.Add(h*7919, summary.MediumGPU)
	}
	side.SetSummarySource(b)
	if !waitFor(t, 10*time.Second, func() bool {
		v, fresh := bal.Peers().View().Member("side").Summary(time.Now())
		return fresh && v.Contains(19999*7919, summary.MediumGPU) && v.Contains(0, summary.MediumGPU)
	}) {
		t.Fatal("balancer did not receive the summary snapshot over TCP")
	}

	wrongKey := socketNode(t, "intruder", RoleSidecar, []byte("fedcba9876543210"), "prod")
	if _, err := wrongKey.ml.Join([]string{bal.Addr()}); err == nil {
		t.Error("node with another key joined")
	}
	wrongLabel := socketNode(t, "stranger", RoleSidecar, key, "staging")
	if _, err := wrongLabel.ml.Join([]string{bal.Addr()}); err == nil {
		t.Error("node with another cluster label joined")
	}

	// Inject: an announcement claiming to be "side" with Running 999, sent
	// encrypted with the wrong key and as a plain-text packet.
	forged := (&announce{From: "side", SentAt: time.Now().UnixNano(), Load: load.Report{Running: 999}}).marshal()
	to := memberlist.Address{Addr: bal.Addr(), Name: "bal"}
	if err := wrongKey.ml.SendToAddress(to, forged); err != nil {
		t.Logf("send with wrong key: %v", err)
	}
	if conn, err := net.Dial("udp", bal.Addr()); err == nil {
		_, _ = conn.Write(append([]byte{8 /* memberlist userMsg */}, forged...))
		_ = conn.Close()
	}
	// Wait until several genuine announcements arrived after the forged
	// ones; none of the forged values may have been accepted.
	before, _ := loadOf()
	count := 0
	waitFor(t, 2*time.Second, func() bool {
		lr, _ := loadOf()
		if lr.Load.Running == 999 {
			t.Fatal("forged announcement accepted")
		}
		if lr.ReceivedAt.After(before.ReceivedAt) {
			before = lr
			count++
		}
		return count >= 5
	})
	for _, name := range []string{"intruder", "stranger"} {
		if bal.Peers().View().Member(name) != nil {
			t.Errorf("balancer lists %s", name)
		}
	}
	if n := len(wrongKey.Peers().View().Members); n != 1 {
		t.Errorf("intruder sees %d members, want only itself", n)
	}
}
