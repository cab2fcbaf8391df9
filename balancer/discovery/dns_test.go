package discovery

import (
	"context"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/internal/dnstest"
)

// fakeSink records each group's last set.
type fakeSink struct {
	mu   sync.Mutex
	sets map[string][]fleet.Spec
}

func (f *fakeSink) SetDiscovered(group string, specs []fleet.Spec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sets == nil {
		f.sets = map[string][]fleet.Spec{}
	}
	f.sets[group] = specs
	return nil
}

func (f *fakeSink) urls(group string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.sets[group] {
		out = append(out, s.ID+"="+s.URL.String())
	}
	return out
}

func testGroup(hosts ...string) Group {
	return Group{Name: "pool", Hosts: hosts, Port: 8000, Interval: time.Hour, Timeout: 2 * time.Second,
		Replica: fleet.Spec{Models: []string{"m"}, MaxConcurrency: 4}}
}

// Through a real DNS server on loopback: the set follows the answers, a
// failing server or a name gone keeps the last known addresses, several
// names are merged.
func TestRefreshFollowsTheServer(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Set("engines.test", "10.0.0.1", "10.0.0.2")
	srv.Set("more.test", "10.0.0.2", "fd00::3")
	sink := &fakeSink{}
	reg := prometheus.NewRegistry()
	d := New([]Group{testGroup("engines.test.", "more.test.")}, NewResolver(srv.Addr), sink, nil, reg)
	ctx := context.Background()
	steps := []struct {
		name string
		set  func()
		want []string
	}{
		{"first", func() {}, []string{
			"pool-10.0.0.1-8000=http://10.0.0.1:8000", "pool-10.0.0.2-8000=http://10.0.0.2:8000", "pool-fd00--3-8000=http://[fd00::3]:8000"}},
		{"one leaves, one joins", func() { srv.Set("engines.test", "10.0.0.2", "10.0.0.4") }, []string{
			"pool-10.0.0.2-8000=http://10.0.0.2:8000", "pool-10.0.0.4-8000=http://10.0.0.4:8000", "pool-fd00--3-8000=http://[fd00::3]:8000"}},
		{"server failing", func() { srv.Fail(true) }, []string{
			"pool-10.0.0.2-8000=http://10.0.0.2:8000", "pool-10.0.0.4-8000=http://10.0.0.4:8000", "pool-fd00--3-8000=http://[fd00::3]:8000"}},
		{"one name gone", func() { srv.Fail(false); srv.Set("more.test") }, []string{
			"pool-10.0.0.2-8000=http://10.0.0.2:8000", "pool-10.0.0.4-8000=http://10.0.0.4:8000", "pool-fd00--3-8000=http://[fd00::3]:8000"}},
		{"back", func() { srv.Set("more.test", "10.0.0.5") }, []string{
			"pool-10.0.0.2-8000=http://10.0.0.2:8000", "pool-10.0.0.4-8000=http://10.0.0.4:8000", "pool-10.0.0.5-8000=http://10.0.0.5:8000"}},
	}
	for _, st := range steps {
		st.set()
		d.Refresh(ctx)
		if diff := cmp.Diff(st.want, sink.urls("pool")); diff != "" {
			t.Errorf("%s: replicas (-want +got):\n%s", st.name, diff)
		}
	}
	for _, s := range sink.sets["pool"] {
		if !s.Static || s.Group != "pool" || s.MaxConcurrency != 4 || !slices.Equal(s.Models, []string{"m"}) {
			t.Errorf("spec %+v does not carry the group's replica settings", s)
		}
	}
	if got := testutil.ToFloat64(d.m.lookups.WithLabelValues("pool", "error")); got != 3 {
		t.Errorf("%v failed lookups counted, want 3 (two names failing, then one gone)", got)
	}
	if got := testutil.ToFloat64(d.m.replicas.WithLabelValues("pool")); got != 3 {
		t.Errorf("replicas gauge %v, want 3", got)
	}
}

// Run re-resolves on the interval until its context ends.
func TestRunReresolves(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Set("engines.test", "10.0.0.1")
	sink := &fakeSink{}
	g := testGroup("engines.test")
	g.Interval = 10 * time.Millisecond
	d := New([]Group{g}, NewResolver(srv.Addr), sink, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	srv.Set("engines.test", "10.0.0.9")
	want := []string{"pool-10.0.0.9-8000=http://10.0.0.9:8000"}
	deadline := time.After(30 * time.Second) // a hang guard
	for !slices.Equal(sink.urls("pool"), want) {
		select {
		case <-deadline:
			t.Fatalf("replicas %v, want %v", sink.urls("pool"), want)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Into the real fleet: a replica whose address stays is the same replica.
func TestRefreshKeepsReplicasThatStay(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Set("engines.test", "10.0.0.1", "10.0.0.2")
	f, err := fleet.New(fleet.Config{Health: fleet.DefaultHealthConfig()}, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := New([]Group{testGroup("engines.test")}, NewResolver(srv.Addr), f, nil, nil)
	d.Refresh(context.Background())
	kept := f.Snapshot().Replica("pool-10.0.0.1-8000")
	if kept == nil {
		t.Fatalf("replicas %v", f.Snapshot().Replicas)
	}
	srv.Set("engines.test", "10.0.0.1", "10.0.0.3")
	d.Refresh(context.Background())
	s := f.Snapshot()
	if s.Replica("pool-10.0.0.1-8000") != kept || s.Replica("pool-10.0.0.2-8000") != nil || s.Replica("pool-10.0.0.3-8000") == nil {
		t.Errorf("after the change: %v", s.Replicas)
	}
	if u, _ := url.Parse("http://10.0.0.3:8000"); s.Replica("pool-10.0.0.3-8000").URL.String() != u.String() {
		t.Error("wrong URL")
	}
}

func TestReplicaID(t *testing.T) {
	for in, want := range map[string]string{
		"10.1.2.3:8000": "g-10.1.2.3-8000", "[fd00::1]:80": "g-fd00--1-80", "junk": "g-junk",
	} {
		if got := ReplicaID("g", in); got != want {
			t.Errorf("ReplicaID(%q) = %q, want %q", in, got, want)
		}
	}
}
