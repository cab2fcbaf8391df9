package render

import (
	"strings"
	"testing"
)

// The verdict names every run that beats cost_model on a metric, says
// "best" where none does, leaves the oracle out, and drops the hit rate
// where nothing is shared.
func TestVerdict(t *testing.T) {
	cases := []struct {
		name      string
		runs      []run
		want, not []string
	}{
		{
			name: "wins some, loses some",
			runs: []run{base("round_robin", 300, 0.3), base("kv_aware", 30, 0.995), base("cost_model", 40, 0.97), oracle(0.99)},
			want: []string{
				"TTFT p50 20 ms: loses to kv_aware 15 ms",
				"TTFT p99 40 ms: loses to kv_aware 30 ms",
				"hit rate 0.970: loses to kv_aware 0.995",
			},
			not: []string{"oracle", "round_robin 300"},
		},
		{
			name: "best everywhere",
			runs: []run{base("round_robin", 300, 0.3), base("cost_model", 40, 0.97)},
			want: []string{"TTFT p99 40 ms: no run better by more than 2%", "hit rate 0.970: no run better by more than 2%"},
		},
		{
			name: "nothing shared",
			runs: []run{w6("round_robin", 60), w6("least_request", 400), w6("cost_model", 300)},
			want: []string{"TTFT p99 300 ms: loses to round_robin 60 ms"},
			not:  []string{"hit rate"},
		},
		{
			name: "ties within the margin",
			runs: []run{base("kv_aware", 40.5, 0.975), base("cost_model", 41, 0.97)},
			want: []string{"TTFT p99 41 ms: no run better by more than 2%", "hit rate 0.970: no run better by more than 2%"},
		},
		{
			name: "no cost_model run",
			runs: []run{base("round_robin", 300, 0.3)},
			not:  []string{"wins and loses"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sb strings.Builder
			verdict(&sb, sets(tc.runs...)[0].Groups)
			got := sb.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("verdict lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("verdict has %q:\n%s", n, got)
				}
			}
		})
	}
}
