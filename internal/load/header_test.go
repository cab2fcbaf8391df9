package load

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoundTrip(t *testing.T) {
	want := Report{Running: 3, Waiting: 2, KVUsage: 0.4375, InFlight: 9, Pending: 4, PrefillTokens: 12345, HeldBlocks: 1500}
	wantOwn := Share{InFlight: 2, Pending: 1, PrefillTokens: 2048}
	got, own, err := ParseHeader(EncodeHeader(want, wantOwn))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantOwn, own); diff != "" {
		t.Errorf("round trip of the share (-want +got):\n%s", diff)
	}
}

// The header's bytes are those every released sidecar writes and every
// released balancer parses: the released form with blocks_held appended.
// The released form alone (a sidecar older than blocks_held) still parses,
// with the blocks held unknown.
func TestEncodeHeaderBytes(t *testing.T) {
	r := Report{Running: 3, Waiting: 2, KVUsage: 0.4375, InFlight: 9, Pending: 4, PrefillTokens: 12345, HeldBlocks: 777}
	own := Share{Origin: "b", InFlight: 2, Pending: 1, PrefillTokens: 2048}
	released := "TEXT named_metrics.running=3, named_metrics.waiting=2, named_metrics.kv_usage=0.4375, " +
		"named_metrics.in_flight=9, named_metrics.prefilling=4, named_metrics.prefill_tokens=12345, " +
		"named_metrics.own_in_flight=2, named_metrics.own_prefilling=1, named_metrics.own_prefill_tokens=2048"
	if got, want := EncodeHeader(r, own), released+", named_metrics.blocks_held=777"; got != want {
		t.Errorf("EncodeHeader =\n%s\nwant\n%s", got, want)
	}
	got, gotOwn, err := ParseHeader(released)
	if err != nil {
		t.Fatalf("a released sidecar's header: %v", err)
	}
	r.HeldBlocks, own.Origin = -1, ""
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("a released sidecar's header (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(own, gotOwn); diff != "" {
		t.Errorf("a released sidecar's share (-want +got):\n%s", diff)
	}
	if got, _, _ := ParseHeader(EncodeHeader(Report{HeldBlocks: -1}, Share{})); got.HeldBlocks != -1 {
		t.Errorf("unknown blocks held round trip to %d, want -1", got.HeldBlocks)
	}
}

func TestParse(t *testing.T) {
	full := EncodeHeader(Report{Running: 1}, Share{})
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"ours", full, true},
		{"other ORCA fields are ignored", "TEXT cpu_utilization=0.5, " + full[len("TEXT "):] + ", named_metrics.other=7", true},
		{"JSON form", `JSON {"named_metrics":{}}`, false},
		{"missing metric", "TEXT named_metrics.running=1", false},
		{"negative", "TEXT " + replace(full, "named_metrics.running=1", "named_metrics.running=-1"), false},
		{"blocks held unknown", "TEXT " + replace(full, "named_metrics.blocks_held=0", "named_metrics.blocks_held=-1"), true},
		{"blocks held below -1", "TEXT " + replace(full, "named_metrics.blocks_held=0", "named_metrics.blocks_held=-2"), false},
		{"not a number", "TEXT " + replace(full, "named_metrics.running=1", "named_metrics.running=x"), false},
		{"infinite", "TEXT " + replace(full, "named_metrics.running=1", "named_metrics.running=Inf"), false},
		{"no equals", "TEXT running", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseHeader(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseHeader(%q) err = %v, want ok %v", tt.in, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("err %v does not wrap ErrMalformed", err)
			}
		})
	}
}

func replace(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[len("TEXT "):i] + new + s[i+len(old):]
		}
	}
	panic("no " + old)
}

func TestValidOrigin(t *testing.T) {
	for s, want := range map[string]bool{"balancer-1": true, "": false, "a b": false, "é": false, string(make([]byte, 129)): false} {
		if got := ValidOrigin(s); got != want {
			t.Errorf("ValidOrigin(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(EncodeHeader(Report{Running: 1, KVUsage: 0.5, PrefillTokens: 100}, Share{}))
	f.Add("TEXT named_metrics.running=1e300")
	f.Fuzz(func(t *testing.T, s string) {
		r, own, err := ParseHeader(s)
		if err != nil {
			return
		}
		v := EncodeHeader(r, own)
		again, againOwn, err := ParseHeader(v)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", v, err)
		}
		if again.Running != r.Running || again.PrefillTokens != r.PrefillTokens || againOwn.InFlight != own.InFlight {
			t.Fatalf("round trip changed %+v %+v to %+v %+v", r, own, again, againOwn)
		}
	})
}
