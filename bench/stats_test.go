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
	if s.Usage != 2 {
		t.Errorf("usage arrived for %d requests, want 2 (the failed one has none)", s.Usage)
	}
	if s.Goodput != 0.5 {
		t.Errorf("goodput %v/s, want 1 good request over 2 s of arrivals (1 s to 3 s)", s.Goodput)
	}
	// Two runs of one arrival plan, every request within the SLO: one
	// goodput, however long the last answer took (it was good/the span to
	// the last end, and such pairs differed by up to 8% in the committed
	// matrix).
	slow := []Record{recs[1], recs[1]} // the first one within the SLO
	slow[1].Scheduled, slow[1].E2E = 2*time.Second, 9*time.Second
	fast := []Record{slow[0], slow[1]}
	fast[1].E2E = time.Second
	if a, b := Summarize(slow, SLO{TTFT: 2 * time.Second, TPOT: 100 * ms}), Summarize(fast, SLO{TTFT: 2 * time.Second, TPOT: 100 * ms}); a.Goodput != b.Goodput || a.Goodput != 2 {
		t.Errorf("goodput %v/s and %v/s for one plan all within the SLO, want 2/s both", a.Goodput, b.Goodput)
	}
}

// A result read back takes its goodput from its records by the definition of
// Summarize, whatever its file says (results written before 2026-12-04
// divided by the span to the last answer's end).
func TestReadResultGoodputFromRecords(t *testing.T) {
	ms := time.Millisecond
	slo := SLO{TTFT: 2 * time.Second, TPOT: 100 * ms}
	recs := []Record{
		{Scheduled: time.Second, Status: 200, TTFT: 100 * ms, TPOT: 10 * ms, E2E: time.Second},
		{Scheduled: 3 * time.Second, Status: 200, TTFT: 100 * ms, TPOT: 10 * ms, E2E: 5 * time.Second},
	}
	r := &Result{Config: Config{SLO: slo}, Records: recs, Summary: Summarize(recs, slo)}
	r.Summary.Goodput = 0.28 // 2 good over 7 s to the last end: the old definition
	path := t.TempDir() + "/r.json"
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Summary.Goodput != 1 {
		t.Errorf("goodput read back %v/s, want 1 (2 good over 2 s of arrivals)", got.Summary.Goodput)
	}
}
