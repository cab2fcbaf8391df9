package bench

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestQuantile(t *testing.T) {
	xs := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.1, 1}, {0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}} {
		if got := Quantile(xs, tt.q); got != tt.want {
			t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if Quantile(nil, 0.5) != 0 {
		t.Error("Quantile of nothing must be 0")
	}
}

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	recs := []Record{
		// Warm-up: ignored entirely.
		{Scheduled: 0, Status: 200, TTFT: 9 * time.Second, E2E: 10 * time.Second, Warmup: true, Replica: "a"},
		// Meets the SLO.
		{Scheduled: time.Second, Status: 200, TTFT: 100 * ms, TPOT: 10 * ms, E2E: time.Second, CompletionTokens: 10,
			PromptTokens: 1000, CachedTokens: 800, CachedReported: true, PredictedCached: 800, PredictedReported: true, Replica: "a", ITL: []time.Duration{10 * ms}},
		// Misses the TTFT SLO.
		{Scheduled: 2 * time.Second, Status: 200, TTFT: 3 * time.Second, TPOT: 10 * ms, E2E: 4 * time.Second, CompletionTokens: 10,
			PromptTokens: 1000, CachedTokens: 0, CachedReported: true, PredictedCached: 100, PredictedReported: true, Replica: "b"},
		// Failed.
		{Scheduled: 3 * time.Second, Status: 503, Err: "status 503", E2E: ms, Replica: "b"},
	}
	s := Summarize(recs, SLO{TTFT: 2 * time.Second, TPOT: 100 * ms})
	got := struct {
		Requests, Failed, Predicted int
		Window                      time.Duration
		Good, Hit, Exact, MAE       float64
		Share                       map[string]float64
		TTFTMax                     float64
	}{s.Requests, s.Failed, s.Predicted, s.Window, s.GoodFraction, s.HitRateUsage, s.PredictionExact, s.PredictionMAE, s.ReplicaShare, s.TTFT.Max}
	want := got
	want.Requests, want.Failed, want.Predicted = 3, 1, 2
	want.Window = 5 * time.Second // 1 s → 6 s (the second request ends at 2+4)
	want.Good, want.Hit, want.Exact, want.MAE = 1.0/3, 0.4, 0.5, 50
	want.Share = map[string]float64{"a": 1.0 / 3, "b": 2.0 / 3}
	want.TTFTMax = 3000
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summarize mismatch (-want +got):\n%s", diff)
	}
	if s.Goodput != 0.2 {
		t.Errorf("goodput %v/s, want 1 good request over 5 s", s.Goodput)
	}
}
