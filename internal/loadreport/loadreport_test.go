package loadreport

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoundTrip(t *testing.T) {
	want := Report{Running: 3, Waiting: 2, KVUsage: 0.4375, InFlight: 9, Prefilling: 4, PrefillTokens: 12345,
		OwnInFlight: 2, OwnPrefilling: 1, OwnPrefillTokens: 2048}
	got, err := Parse(want.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestParse(t *testing.T) {
	full := Report{Running: 1}.Encode()
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"ours", full, true},
		{"other ORCA fields are ignored", "TEXT cpu_utilization=0.5, " + full[len("TEXT "):] + ", named_metrics.other=7", true},
		{"JSON form", `JSON {"named_metrics":{}}`, false},
		{"missing metric", "TEXT named_metrics.running=1", false},
		{"negative", "TEXT " + replace(full, "named_metrics.running=1", "named_metrics.running=-1"), false},
		{"not a number", "TEXT " + replace(full, "named_metrics.running=1", "named_metrics.running=x"), false},
		{"infinite", "TEXT " + replace(full, "named_metrics.running=1", "named_metrics.running=Inf"), false},
		{"no equals", "TEXT running", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("Parse(%q) err = %v, want ok %v", tt.in, err, tt.ok)
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
	f.Add(Report{Running: 1, KVUsage: 0.5, PrefillTokens: 100}.Encode())
	f.Add("TEXT named_metrics.running=1e300")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(r.Encode())
		if err != nil {
			t.Fatalf("re-parse of %q: %v", r.Encode(), err)
		}
		if again.Running != r.Running || again.PrefillTokens != r.PrefillTokens || again.OwnInFlight != r.OwnInFlight {
			t.Fatalf("round trip changed %+v to %+v", r, again)
		}
	})
}
