package main

import (
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/devfleet"
)

func TestDevConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		edit    func(*devfleet.Config)
		wantErr bool
	}{
		{"defaults", nil, func(*devfleet.Config) {}, false},
		{"exact state", []string{"--exact-state"}, func(c *devfleet.Config) { c.ExactState = true }, false},
		{"overlay off", []string{"--exact-state", "--overlay-ttl", "-1ns"}, func(c *devfleet.Config) { c.ExactState, c.OverlayTTL = true, -1 }, false},
		{"fleet shape", []string{"--replicas", "2", "--balancers", "3", "--port", "0", "--policy", "prefix_hash", "--exact-state=false"},
			func(c *devfleet.Config) { c.Replicas, c.Balancers, c.Port, c.Policy = 2, 3, 0, "prefix_hash" }, false},
		{"routing", []string{"--routing", "testdata/shed.yaml"}, func(c *devfleet.Config) {
			rc := route.DefaultConfig()
			rc.ShedDelay = 1500 * time.Millisecond
			c.Routing = &rc
		}, false},
		{"routing file missing", []string{"--routing", "testdata/none.yaml"}, nil, true},
		{"routing sets the policy", []string{"--routing", "testdata/routing-policy.yaml"}, nil, true},
		{"shed delay without cost_model", []string{"--policy", "round_robin", "--routing", "testdata/shed.yaml"}, nil, true},
		{"unknown flag", []string{"--exact"}, nil, true},
		{"stray argument", []string{"now"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := devConfig(tt.args, io.Discard)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("devConfig(%q) = nil error, want one", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := devfleet.DefaultConfig()
			tt.edit(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("devConfig(%q) mismatch (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}
