package gossip

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestLeaveAfterDeadNotice: a member's leave message handled after
// memberlist's departure notice (memberlist's packet queue is last in, first
// out) still marks it left, within the leave grace; a leave message long
// after a failure does not rewrite it.
func TestLeaveAfterDeadNotice(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeName = "bal"
	f := newPeers(cfg, nil)
	now := time.Unix(1000, 0)
	for _, name := range []string{"early", "late"} {
		f.upsert(&memberlist.Node{Name: name, Addr: net.IPv4(10, 0, 0, 1), Port: 7946}, Meta{Role: RoleSidecar}, now)
		if st := f.remove(name, now); st != StatusDead {
			t.Fatalf("%s removed without a leave: %v, want dead", name, st)
		}
	}
	if !f.leftLate("early", now.Add(time.Second)) {
		t.Fatal("a leave 1 s after the dead notice was not applied")
	}
	if m := f.View().Member("early"); m == nil || m.Status != StatusLeft {
		t.Fatalf("early: %+v, want left", m)
	}
	if f.leftLate("late", now.Add(leaveGrace)) {
		t.Fatal("a leave past the grace rewrote a failure")
	}
	if m := f.View().Member("late"); m == nil || m.Status != StatusDead {
		t.Fatalf("late: %+v, want dead", m)
	}
	if f.leftLate("nobody", now) {
		t.Fatal("a leave of an unknown member was applied")
	}
}
