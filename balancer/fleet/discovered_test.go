package fleet

import (
	"testing"
)

func discovered(group, id string) Spec {
	s := spec(id, "m")
	s.Group = group
	return s
}

// A discovered replica that stays keeps its state; one that goes takes no new
// requests but is not marked down, so what it runs finishes; a static
// replica's name wins over a discovered one's.
func TestSetDiscovered(t *testing.T) {
	f, _ := newTestFleet(t, []Spec{spec("static", "m")}, nil)
	if err := f.SetDiscovered("pool", []Spec{discovered("pool", "a"), discovered("pool", "b")}); err != nil {
		t.Fatal(err)
	}
	snap := f.Snapshot()
	if got := len(snap.Models["m"].Replicas); got != 3 {
		t.Fatalf("%d replicas of m, want 3", got)
	}
	a, b := snap.Replica("a"), snap.Replica("b")
	a.Counters.InFlight.Add(2) // state the next lookup must keep
	b.Counters.InFlight.Add(1) // a request still running when b leaves

	if err := f.SetDiscovered("pool", []Spec{discovered("pool", "a"), discovered("pool", "c"), discovered("pool", "static")}); err != nil {
		t.Fatal(err)
	}
	snap = f.Snapshot()
	if snap.Replica("a") != a || a.Counters.InFlight.Load() != 2 {
		t.Error("a replica that stayed lost its state")
	}
	if snap.Replica("b") != nil {
		t.Error("a replica that left is still routed to")
	}
	if b.Down().Err() != nil {
		t.Error("a replica that left was marked down: its running requests would move")
	}
	if snap.Replica("c") == nil {
		t.Error("a new address did not become a replica")
	}
	if r := snap.Replica("static"); r == nil || r.Group != "" {
		t.Errorf("the static replica was replaced by a discovered one of the same name: %+v", r)
	}

	// Another group is independent; an empty list clears only its own.
	if err := f.SetDiscovered("other", []Spec{discovered("other", "d")}); err != nil {
		t.Fatal(err)
	}
	if err := f.SetDiscovered("pool", nil); err != nil {
		t.Fatal(err)
	}
	snap = f.Snapshot()
	if snap.Replica("a") != nil || snap.Replica("d") == nil || snap.Replica("static") == nil {
		t.Errorf("after clearing pool: replicas %v", ids(snap))
	}
	// A reload of the static replicas keeps the discovered ones.
	if err := f.SetStatic(nil); err != nil {
		t.Fatal(err)
	}
	if snap = f.Snapshot(); snap.Replica("d") == nil {
		t.Errorf("after a static reload: replicas %v", ids(snap))
	}
	if err := f.SetDiscovered("pool", []Spec{discovered("pool", "x"), discovered("pool", "x")}); err == nil {
		t.Error("a duplicate discovered replica was accepted")
	}
}

func ids(s *Snapshot) []string {
	var out []string
	for _, r := range s.Replicas {
		out = append(out, r.ID)
	}
	return out
}
