package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/bench"
)

// Workload flags start from the named workload's defaults and override only
// what was given.
func TestWorkloadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want func() bench.WorkloadConfig
	}{
		{"defaults", nil, func() bench.WorkloadConfig { return bench.DefaultWorkload(bench.W1) }},
		{"W2 overrides", []string{"--workload", "W2", "--rate", "2.5", "--turns", "3", "--think", "2s", "--seed", "9"}, func() bench.WorkloadConfig {
			c := bench.DefaultWorkload(bench.W2)
			c.Rate, c.Turns, c.Think, c.Seed = 2.5, 3, 2*time.Second, 9
			return c
		}},
		{"trace", []string{"--workload", "mooncake", "--trace", "t.jsonl", "--speedup", "4", "--max-input-tokens", "1000"}, func() bench.WorkloadConfig {
			c := bench.DefaultWorkload(bench.Mooncake)
			c.TracePath, c.Speedup, c.MaxInputTokens = "t.jsonl", 4, 1000
			return c
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			apply := workloadFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := apply()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want(), got); diff != "" {
				t.Errorf("workload mismatch (-want +got):\n%s", diff)
			}
		})
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	apply := workloadFlags(fs)
	_ = fs.Parse([]string{"--duration", "soon"})
	if _, err := apply(); err == nil || !strings.Contains(err.Error(), "--duration") {
		t.Errorf("a bad duration gave %v, want an error naming --duration", err)
	}
}

func TestBenchUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"bench"}, &out, &errb); code != 2 {
		t.Errorf("inferrail bench exited %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "run|compare|report") {
		t.Errorf("usage lacks the subcommands: %q", errb.String())
	}
	if code := runMain(context.Background(), []string{"bench", "frobnicate"}, &out, &errb); code != 2 {
		t.Errorf("unknown subcommand exited %d, want 2", code)
	}
}
