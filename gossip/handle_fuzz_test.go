package gossip

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
)

// fuzzCluster is a balancer and a sidecar on loopback, shared by the fuzz
// iterations of one process.
var fuzzCluster struct {
	once      sync.Once
	bal, side *Node
}

// FuzzHandle feeds messages to a balancer's and a sidecar's handler as
// memberlist hands them over after decryption: whatever a member sends, the
// node neither panics nor forgets the member; summaries carried in a
// message from the known sidecar (body) reach the summary decoder, and a
// view that accepted one answers prefix queries.
func FuzzHandle(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	b, err := summary.NewBuilder(summary.DefaultConfig(), nil)
	if err != nil {
		f.Fatal(err)
	}
	b.Add(kvblock.Hash(r.Uint64()), summary.MediumGPU)
	f.Add((&announce{From: "side", SentAt: 1, Load: load.Report{Running: 3}, Epoch: 4, Seq: 5}).marshal(), false)
	f.Add(marshalResync("bal"), false)
	f.Add(marshalLeave("side"), false)
	f.Add(b.EncodeSnapshot(), true)
	deltas, _ := b.Flush()
	for _, d := range deltas {
		f.Add(d, true)
	}
	f.Fuzz(func(t *testing.T, msg []byte, asSummary bool) {
		fuzzCluster.once.Do(func() {
			fuzzCluster.bal = fuzzNode(t, "bal", RoleBalancer)
			fuzzCluster.side = fuzzNode(t, "side", RoleSidecar, fuzzCluster.bal.Addr())
			if !waitFor(t, 10*time.Second, func() bool { return sees(fuzzCluster.bal, "side") && sees(fuzzCluster.side, "bal") }) {
				t.Fatal("no convergence")
			}
		})
		bal, side := fuzzCluster.bal, fuzzCluster.side
		if !sees(bal, "side") {
			t.Fatal("the balancer does not see the sidecar")
		}
		if asSummary {
			msg = marshalSummary("side", msg)
		}
		now := time.Now()
		bal.handle(msg, now)
		side.handle(msg, now)
		m := bal.Peers().View().Member("side")
		if m == nil {
			t.Fatal("the balancer forgot the sidecar")
		}
		v, _ := m.Summary(now)
		_ = v.LongestPrefix([]kvblock.Hash{1, 2, 3}, summary.MediumGPU)
	})
}

// fuzzNode starts a node on loopback that runs until the process ends (fuzz
// iterations share it).
func fuzzNode(t *testing.T, name string, role Role, join ...string) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NodeName, cfg.Role = name, role
	cfg.BindAddr, cfg.BindPort, cfg.Profile = "127.0.0.1", 0, ProfileLocal
	cfg.Join = join
	cfg.JoinRetryMin, cfg.JoinRetryMax = 50*time.Millisecond, 200*time.Millisecond
	n, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	go func() { _ = n.Run(context.Background()) }()
	return n
}
