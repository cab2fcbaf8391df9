package devfleet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/balancer"
	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/sidecar"
)

func writeTemp(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The exact-state sidecar file passes the sidecar's strict loader and
// changes exactly the dissemination settings, nothing else.
func TestSidecarExactYAML(t *testing.T) {
	got, err := sidecar.LoadConfigFile(writeTemp(t, "s.yaml", sidecarExactYAML()))
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("invalid: %v", err)
	}
	want := sidecar.DefaultConfig()
	want.Scrape.Interval = 10 * time.Millisecond
	want.Summary.FalsePositiveRate = 1e-7
	want.Summary.RebuildRemovedFraction = 0.05
	want.Gossip.Timings = gossip.Timings{LoadInterval: 5 * time.Millisecond, ResyncInterval: 50 * time.Millisecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exact-state sidecar config (-want +got):\n%s", diff)
	}
}

// An exact-state balancer differs from a normal one only in its resync
// timings; the max ages and the routing stay as they are.
func TestBalancerYAMLExactState(t *testing.T) {
	load := func(exact bool) balancer.Config {
		cfg := DefaultConfig()
		cfg.ExactState = exact
		bc, err := balancer.LoadConfigFile(writeTemp(t, "b.yaml", mustBalancerYAML(t, cfg, 0, 18080, 19090, 17946, "127.0.0.1:7000")))
		if err != nil {
			t.Fatal(err)
		}
		if err := bc.Validate(); err != nil {
			t.Fatalf("exact=%v: invalid: %v", exact, err)
		}
		return bc
	}
	plain, exact := load(false), load(true)
	if plain.Gossip.Timings != (gossip.Timings{}) {
		t.Errorf("plain fleet sets gossip timings %+v", plain.Gossip.Timings)
	}
	want := plain
	want.Gossip.Timings = gossip.Timings{ResyncAfter: 15 * time.Millisecond, ResyncInterval: 50 * time.Millisecond}
	if diff := cmp.Diff(want, exact); diff != "" {
		t.Errorf("exact-state balancer config (-want +got):\n%s", diff)
	}
}

// OverlayTTL reaches the model's routing config: 0 keeps the default,
// a negative value writes 0 (no overlay); nothing else changes.
func TestBalancerYAMLOverlayTTL(t *testing.T) {
	tests := []struct {
		name string
		ttl  time.Duration
		want time.Duration
	}{
		{"default", 0, 10 * time.Second},
		{"short", 50 * time.Millisecond, 50 * time.Millisecond},
		{"off", -1, 0},
	}
	var base balancer.Config
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.OverlayTTL = tt.ttl
			bc, err := balancer.LoadConfigFile(writeTemp(t, "b.yaml", mustBalancerYAML(t, cfg, 0, 18080, 19090, 17946, "127.0.0.1:7000")))
			if err != nil {
				t.Fatal(err)
			}
			if err := bc.Validate(); err != nil {
				t.Fatalf("invalid: %v", err)
			}
			if got := bc.Models[0].Routing.Overlay.TTL; got != tt.want {
				t.Errorf("overlay ttl %v, want %v", got, tt.want)
			}
			bc.Models[0].Routing.Overlay.TTL = 0
			if i == 0 {
				base = bc
				return
			}
			if diff := cmp.Diff(base, bc); diff != "" {
				t.Errorf("config differs beyond the overlay ttl (-default +got):\n%s", diff)
			}
		})
	}
}
