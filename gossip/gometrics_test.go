package gossip

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMemberlistMetricsBridged: memberlist's go-metrics reach the node's own
// registerer, and a second node in the process does not mix into it.
func TestMemberlistMetricsBridged(t *testing.T) {
	newNode := func(name string, reg prometheus.Registerer) *Node {
		cfg := DefaultConfig()
		cfg.NodeName, cfg.Role = name, RoleObserver
		cfg.BindAddr, cfg.BindPort, cfg.Profile = "127.0.0.1", 0, ProfileLocal
		n, err := New(cfg, nil, reg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Shutdown() })
		return n
	}
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	a := newNode("metrics-a", regA)
	b := newNode("metrics-b", regB)
	if _, err := b.ml.Join([]string{a.Addr()}); err != nil {
		t.Fatal(err)
	}
	value := func(reg *prometheus.Registry, family, name string) (float64, bool) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != family {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "name" && l.GetValue() == name {
						switch {
						case m.Counter != nil:
							return m.GetCounter().GetValue(), true
						case m.Gauge != nil:
							return m.GetGauge().GetValue(), true
						case m.Summary != nil:
							return float64(m.GetSummary().GetSampleCount()), true
						}
					}
				}
			}
		}
		return 0, false
	}
	// b dialed a for the join; a accepted it.
	if v, ok := value(regA, "inferrail_gossip_memberlist_total", "memberlist_tcp_accept"); !ok || v < 1 {
		t.Errorf("a: memberlist_tcp_accept = %v (present %v), want >= 1", v, ok)
	}
	if v, ok := value(regB, "inferrail_gossip_memberlist_total", "memberlist_tcp_connect"); !ok || v < 1 {
		t.Errorf("b: memberlist_tcp_connect = %v (present %v), want >= 1", v, ok)
	}
	if _, ok := value(regA, "inferrail_gossip_memberlist_total", "memberlist_tcp_connect"); ok {
		t.Error("b's connect counted on a's registry")
	}
	if !waitFor(t, 5*time.Second, func() bool {
		v, ok := value(regB, "inferrail_gossip_memberlist_sample", "memberlist_pushPullNode")
		return ok && v >= 1
	}) {
		t.Error("b: no memberlist_pushPullNode timing sample")
	}
}

// TestNewRegistersOrFails: a second node on the same registerer is refused
// with an error, not a panic, and leaves nothing bound.
func TestNewRegistersOrFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.NodeName, cfg.Role = "reg-a", RoleObserver
	cfg.BindAddr, cfg.BindPort, cfg.Profile = "127.0.0.1", 0, ProfileLocal
	a, err := New(cfg, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	cfg.NodeName = "reg-b"
	if b, err := New(cfg, nil, reg); err == nil {
		_ = b.Shutdown()
		t.Fatal("second node on the same registerer accepted")
	}
}
