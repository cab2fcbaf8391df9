package bench

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ParseEngineTimes keys each request by the id the client sent (the engine
// id without the suffix after its last '-'), skips requests without a first
// token, keeps the retried request's copy that has one, reads the arrival,
// the queue and the preemptions where the engine lists them, and rejects a
// page that is not JSON.
func TestParseEngineTimes(t *testing.T) {
	page := `{"ranks":[{"rank":0,"requests":[
		{"id":"bench-ab-s1-t0-0a1b2c3d","arrival":"2026-12-06T09:00:00.25Z","ttft_ns":120000000,"queue_ns":70000000,"preemptions":2},
		{"id":"bench-ab-s2-t0-99999999","ttft_ns":0},
		{"id":"nosuffix","ttft_ns":5},
		{"id":"-1f2e3d4c","ttft_ns":5}
	]},{"rank":1,"requests":[
		{"id":"bench-ab-s2-t0-12345678","ttft_ns":80000000}
	]}]}`
	got := map[string]EngineTiming{}
	if err := ParseEngineTimes([]byte(page), got); err != nil {
		t.Fatal(err)
	}
	want := map[string]EngineTiming{
		"bench-ab-s1-t0": {Arrival: time.Date(2026, 12, 6, 9, 0, 0, 250e6, time.UTC), TTFT: 120 * time.Millisecond, Queue: 70 * time.Millisecond, Preemptions: 2},
		"bench-ab-s2-t0": {TTFT: 80 * time.Millisecond}, // a simulator that lists no arrival
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseEngineTimes mismatch (-want +got):\n%s", diff)
	}
	if err := ParseEngineTimes([]byte(`{"ranks":[{"requests":[{"id":1}]}]}`), got); err == nil {
		t.Error("a page with a numeric id parsed")
	}
	if err := ParseEngineTimes([]byte(`{"ranks":[{"requests":[{"id":"a-b","arrival":"yesterday","ttft_ns":1}]}]}`), got); err == nil {
		t.Error("a page with an arrival that is no time parsed")
	}
	if err := ParseEngineTimes([]byte("<html>"), got); err == nil {
		t.Error("a page that is not JSON parsed")
	}
}

func FuzzParseEngineTimes(f *testing.F) {
	f.Add([]byte(`{"ranks":[{"rank":0,"requests":[{"id":"a-b","ttft_ns":1}]}]}`))
	f.Add([]byte(`{"ranks":[{"rank":0,"requests":[{"id":"a-b","arrival":"2026-12-06T09:00:00Z","ttft_ns":1}]}]}`))
	f.Add([]byte(`{"ranks":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := map[string]EngineTiming{}
		if err := ParseEngineTimes(b, got); err != nil {
			return
		}
		for id, e := range got {
			if id == "" || e.TTFT <= 0 || e.Queue < 0 || e.Preemptions < 0 {
				t.Fatalf("entry %q: %+v; want a non-empty id, a positive TTFT and no negative queue or preemptions", id, e)
			}
		}
	})
}
