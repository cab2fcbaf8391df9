package gossip

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/load"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestHandleRejects feeds messages straight to a balancer's handler: only an
// alive sidecar may announce or send summaries, only a balancer may ask a
// sidecar for a resync, and malformed input is counted, never applied.
func TestHandleRejects(t *testing.T) {
	bal := socketNode(t, "bal", RoleBalancer, nil, "")
	side := socketNode(t, "side", RoleSidecar, nil, "", bal.Addr())
	obs := socketNode(t, "obs", RoleObserver, nil, "", bal.Addr())
	if !waitFor(t, 10*time.Second, func() bool {
		return sees(bal, "side") && sees(bal, "obs") && sees(side, "bal") && sees(side, "obs") && sees(obs, "side")
	}) {
		t.Fatal("no convergence")
	}
	now := time.Now()
	ann := func(from string) []byte {
		return (&announce{From: from, SentAt: now.UnixNano(), Load: load.Report{Running: 42}}).marshal()
	}
	tests := []struct {
		name   string
		node   *Node
		msg    []byte
		reason string
	}{
		{name: "garbage", node: bal, msg: []byte{0xff, 1, 2, 3}, reason: "malformed"},
		{name: "unknown sender", node: bal, msg: ann("nobody"), reason: "unknown_sender"},
		{name: "observer announcing", node: bal, msg: ann("obs"), reason: "wrong_role"},
		{name: "itself", node: bal, msg: ann("bal"), reason: "unknown_sender"},
		{name: "summary to an observer", node: obs, msg: marshalSummary("side", []byte{1, 1, 0, 0, 0}), reason: "wrong_role"},
		{name: "resync from a sidecar", node: side, msg: marshalResync("side"), reason: "unknown_sender"},
		{name: "resync from an observer", node: side, msg: marshalResync("obs"), reason: "wrong_role"},
		{name: "truncated announcement", node: bal, msg: ann("side")[:12], reason: "malformed"},
		{name: "bad summary body", node: bal, msg: marshalSummary("side", []byte{9, 9}), reason: "malformed"},
		{name: "placements from a sidecar", node: bal, msg: append(appendHeader(nil, msgPlacements, "side"), 1), reason: "wrong_role"},
		{name: "placements to a sidecar", node: side, msg: append(appendHeader(nil, msgPlacements, "bal"), 1), reason: "wrong_role"},
		{name: "load from a sidecar", node: bal, msg: append(appendHeader(nil, msgLoad, "side"), 1), reason: "wrong_role"},
		{name: "load to a sidecar", node: side, msg: append(appendHeader(nil, msgLoad, "bal"), 1), reason: "wrong_role"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.node.m.rejected.WithLabelValues(tc.reason)
			before := counterValue(t, c)
			tc.node.handle(tc.msg, now)
			if got := counterValue(t, c); got != before+1 {
				t.Fatalf("rejected{reason=%s} went from %v to %v", tc.reason, before, got)
			}
		})
	}
	if m := bal.Peers().View().Member("obs"); m != nil {
		if lr, _, ok := m.Load(now); ok && lr.Load.Running == 42 {
			t.Error("observer's forged load accepted")
		}
	}
	// A well-formed announcement from the sidecar is accepted.
	bal.handle(ann("side"), now)
	if lr, _, ok := bal.Peers().View().Member("side").Load(now); !ok || lr.Load.Running != 42 {
		t.Errorf("genuine announcement not applied: %+v", lr)
	}
}

// TestLeaveShutdownIdempotent: Leave and Shutdown can be called in any order,
// any number of times.
func TestLeaveShutdownIdempotent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeName, cfg.Role = "solo", RoleObserver
	cfg.BindAddr, cfg.BindPort, cfg.Profile = "127.0.0.1", 0, ProfileLocal
	n, err := New(cfg, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := n.Leave(); err != nil {
			t.Fatalf("Leave: %v", err)
		}
	}
	for range 2 {
		if err := n.Shutdown(); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	}
	if err := n.Leave(); err != nil {
		t.Fatalf("Leave after Shutdown: %v", err)
	}
	if err := n.Run(t.Context()); err != nil {
		t.Fatalf("Run after Shutdown: %v", err)
	}
	if err := n.Run(t.Context()); err == nil {
		t.Fatal("second Run succeeded")
	}
}

// TestMetaUpdates: SetMeta keeps the role and, while a summary source is
// set, the summary epoch the node maintains; UpdateMeta changes one field.
func TestMetaUpdates(t *testing.T) {
	n := socketNode(t, "meta", RoleSidecar, nil, "")
	if err := n.SetMeta(Meta{Role: RoleBalancer, Models: []string{"m"}, SummaryEpoch: 7}); err != nil {
		t.Fatal(err)
	}
	if m := n.Meta(); m.Role != RoleSidecar || m.SummaryEpoch != 7 {
		t.Fatalf("without a source: %+v", m)
	}
	b, err := summary.NewBuilder(summary.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n.SetSummarySource(b)
	epoch, _ := b.Version()
	if m := n.Meta(); m.SummaryEpoch != epoch {
		t.Fatalf("epoch after SetSummarySource = %d, want %d", m.SummaryEpoch, epoch)
	}
	if err := n.SetMeta(Meta{Models: []string{"m", "lora"}}); err != nil {
		t.Fatal(err)
	}
	if m := n.Meta(); m.SummaryEpoch != epoch || len(m.Models) != 2 {
		t.Fatalf("SetMeta with a source: %+v", m)
	}
	if err := n.UpdateMeta(func(m *Meta) { m.Engine = "vllm" }); err != nil {
		t.Fatal(err)
	}
	if m := n.Meta(); m.Engine != "vllm" || len(m.Models) != 2 {
		t.Fatalf("UpdateMeta: %+v", m)
	}
	if !waitFor(t, 5*time.Second, func() bool {
		self := n.Peers().View().Member("meta")
		return self != nil && self.Meta.Engine == "vllm"
	}) {
		t.Fatalf("peers' self entry: %+v", n.Peers().View().Member("meta"))
	}
	if err := n.UpdateMeta(func(m *Meta) { m.Version = strings.Repeat("v", 600) }); !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("oversized metadata: %v", err)
	}
}
