package bench

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ParseEngineTTFTs keys each request by the id the client sent (the engine
// id without the suffix after its last '-'), skips requests without a first
// token, keeps the retried request's copy that has one, and rejects a page
// that is not JSON.
func TestParseEngineTTFTs(t *testing.T) {
	page := `{"ranks":[{"rank":0,"requests":[
		{"id":"bench-ab-s1-t0-0a1b2c3d","ttft_ns":120000000},
		{"id":"bench-ab-s2-t0-99999999","ttft_ns":0},
		{"id":"nosuffix","ttft_ns":5},
		{"id":"-1f2e3d4c","ttft_ns":5}
	]},{"rank":1,"requests":[
		{"id":"bench-ab-s2-t0-12345678","ttft_ns":80000000}
	]}]}`
	got := map[string]time.Duration{}
	if err := ParseEngineTTFTs([]byte(page), got); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"bench-ab-s1-t0": 120 * time.Millisecond, "bench-ab-s2-t0": 80 * time.Millisecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseEngineTTFTs mismatch (-want +got):\n%s", diff)
	}
	if err := ParseEngineTTFTs([]byte(`{"ranks":[{"requests":[{"id":1}]}]}`), got); err == nil {
		t.Error("a page with a numeric id parsed")
	}
	if err := ParseEngineTTFTs([]byte("<html>"), got); err == nil {
		t.Error("a page that is not JSON parsed")
	}
}

func FuzzParseEngineTTFTs(f *testing.F) {
	f.Add([]byte(`{"ranks":[{"rank":0,"requests":[{"id":"a-b","ttft_ns":1}]}]}`))
	f.Add([]byte(`{"ranks":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := map[string]time.Duration{}
		if err := ParseEngineTTFTs(b, got); err != nil {
			return
		}
		for id, d := range got {
			if id == "" || d <= 0 {
				t.Fatalf("entry %q: %v; want a non-empty id and a positive TTFT", id, d)
			}
		}
	})
}
