package gossip

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTimingsApply(t *testing.T) {
	tests := []struct {
		name string
		in   Timings
		want func(*Config)
	}{
		{"zero keeps the defaults", Timings{}, func(*Config) {}},
		{"every field", Timings{LoadInterval: 5 * time.Millisecond, LoadMaxAge: 50 * time.Millisecond,
			SummaryMaxAge: 80 * time.Millisecond, ResyncAfter: 15 * time.Millisecond, ResyncInterval: 40 * time.Millisecond},
			func(c *Config) {
				c.LoadInterval, c.LoadMaxAge, c.SummaryMaxAge = 5*time.Millisecond, 50*time.Millisecond, 80*time.Millisecond
				c.ResyncAfter, c.ResyncInterval = 15*time.Millisecond, 40*time.Millisecond
			}},
		{"one field", Timings{ResyncAfter: time.Second}, func(c *Config) { c.ResyncAfter = time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := DefaultConfig(), DefaultConfig()
			tt.in.Apply(&got)
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Apply() mismatch (-want +got):\n%s", diff)
			}
			got.Role = RoleSidecar
			if err := got.Validate(); err != nil {
				t.Errorf("applied config invalid: %v", err)
			}
		})
	}
}

func TestTimingsValidate(t *testing.T) {
	tests := []struct {
		name string
		in   Timings
		want []string // substrings of the error; nil: valid
	}{
		{"zero", Timings{}, nil},
		{"tight", Timings{LoadInterval: time.Millisecond, ResyncAfter: time.Millisecond}, nil},
		{"negative", Timings{LoadMaxAge: -1, SummaryMaxAge: -1, ResyncAfter: -1, ResyncInterval: -1},
			[]string{"gossip.load_max_age", "gossip.summary_max_age", "gossip.resync_after", "gossip.resync_interval"}},
		{"interval too short", Timings{LoadInterval: time.Microsecond}, []string{"gossip.load_interval must be 0 (the default) or >= 1ms, got 1µs"}},
		{"negative interval", Timings{LoadInterval: -time.Second}, []string{"gossip.load_interval"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate("gossip")
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}
