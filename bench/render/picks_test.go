package render

import (
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// The rules that picked a run's replicas: counted over its measured
// answered requests, the most frequent first, each with what its picks were
// estimated above the lowest candidate's and the TTFTs they got; a run
// whose records do not all name their rule (a cache-blind policy, or results
// from before the balancer named them) gets no rows.
func TestPicksSection(t *testing.T) {
	run := func(label string, reasons ...string) *Group {
		r := &bench.Result{Run: bench.RunInfo{Policy: label}}
		for i, reason := range reasons {
			rec := bench.Record{Status: 200, TTFT: time.Duration(10*(i+1)) * time.Millisecond, RouteReason: reason}
			if reason != "" {
				rec.EstimatedTTFT, rec.LowestEstimatedTTFT = 20*time.Millisecond, 20*time.Millisecond
			}
			if reason == "hot_prefix_replica" {
				rec.LowestEstimatedTTFT = 5 * time.Millisecond // 15 ms above
			}
			r.Records = append(r.Records, rec)
		}
		// Neither warm-up nor failed requests count.
		r.Records = append(r.Records, bench.Record{Status: 200, Warmup: true, RouteReason: "rotation", TTFT: time.Second},
			bench.Record{Status: 500, RouteReason: "rotation"})
		return &Group{Label: label, Run: r.Run, Reps: []*bench.Result{r}}
	}
	cm := run("cost_model", "lowest_ttft", "hot_prefix_replica", "lowest_ttft", "lowest_ttft")
	var sb strings.Builder
	picksSection(&sb, []*Group{cm, run("round_robin", "", "", "")})
	out := sb.String()
	for _, want := range []string{
		"| cost_model | lowest_ttft | 3 (75.0%) | 0.0 | 0 | 30 | 40 |",
		"| cost_model | hot_prefix_replica | 1 (25.0%) | 15.0 | 15 | 20 | 20 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("picksSection():\n%s\nwant the row %q", out, want)
		}
	}
	if strings.Index(out, "lowest_ttft") > strings.Index(out, "hot_prefix_replica") {
		t.Errorf("picksSection():\n%s\nwant the most frequent rule first", out)
	}
	if strings.Contains(out, "round_robin") {
		t.Errorf("picksSection():\n%s\nwant no rows for a run whose records name no rule", out)
	}
	sb.Reset()
	picksSection(&sb, []*Group{run("round_robin", "", "")})
	if sb.Len() != 0 {
		t.Errorf("no run names its rules: %q, want no section", sb.String())
	}
}
