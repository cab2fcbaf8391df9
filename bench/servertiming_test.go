package bench

import (
	"strings"
	"testing"
	"time"
)

func TestServerTiming(t *testing.T) {
	for _, tt := range []struct {
		values []string
		name   string
		want   time.Duration
		ok     bool
	}{
		{[]string{"inferrail-route;dur=0.412, inferrail-upstream;dur=47.113"}, TimingRoute, 412 * time.Microsecond, true},
		{[]string{"inferrail-route;dur=0.412, inferrail-upstream;dur=47.113"}, TimingUpstream, 47113 * time.Microsecond, true},
		// The engine's own metrics come first, in another header line.
		{[]string{`db;desc="a, b; c";dur=3`, "inferrail-route;dur=2"}, TimingRoute, 2 * time.Millisecond, true},
		{[]string{`x;desc="inferrail-route;dur=9", INFERRAIL-ROUTE ; DUR = "1.5"`}, TimingRoute, 1500 * time.Microsecond, true},
		{[]string{"inferrail-route"}, TimingRoute, 0, false},
		{[]string{"inferrail-route;dur=-1"}, TimingRoute, 0, false},
		{[]string{"inferrail-route;dur=NaN"}, TimingRoute, 0, false},
		{[]string{"inferrail-route;dur=1e300"}, TimingRoute, 0, false},
		{[]string{"inferrail-router;dur=1"}, TimingRoute, 0, false},
		{nil, TimingRoute, 0, false},
	} {
		got, ok := ServerTiming(tt.values, tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ServerTiming(%q, %q) = %v, %v; want %v, %v", tt.values, tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestServerTimingDesc(t *testing.T) {
	for _, tt := range []struct {
		values []string
		want   string
		ok     bool
	}{
		{[]string{"inferrail-route;dur=0.412;desc=lowest_ttft, inferrail-upstream;dur=47.113"}, "lowest_ttft", true},
		{[]string{`db;desc="x";dur=3`, `inferrail-route;desc="hot_prefix_replica";dur=2`}, "hot_prefix_replica", true},
		// The first metric of the name with a readable desc counts.
		{[]string{"inferrail-route;dur=1, inferrail-route;dur=2;desc=rotation"}, "rotation", true},
		{[]string{"inferrail-route;dur=1;desc="}, "", false},
		{[]string{"inferrail-route;dur=1;desc=\"a\x01b\""}, "", false},
		{[]string{"inferrail-route;desc=" + strings.Repeat("a", maxTimingDesc+1)}, "", false},
		{[]string{"inferrail-upstream;desc=rotation"}, "", false},
		{nil, "", false},
	} {
		got, ok := ServerTimingDesc(tt.values, TimingRoute)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ServerTimingDesc(%q) = %q, %v; want %q, %v", tt.values, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzServerTiming(f *testing.F) {
	for _, s := range []string{"inferrail-route;dur=0.412, inferrail-upstream;dur=47.113", `a;desc="\",;";dur=1`, `"`, ";;,,=", "inferrail-route;dur=9e18", "inferrail-route;desc=\"a\\\"b\";dur=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range []string{TimingRoute, TimingUpstream} {
			if d, ok := ServerTiming([]string{s}, name); d < 0 || !ok && d != 0 {
				t.Fatalf("ServerTiming(%q, %q) = %v, %v", s, name, d, ok)
			}
			if desc, ok := ServerTimingDesc([]string{s}, name); ok != (desc != "") || len(desc) > maxTimingDesc || !printable(desc) {
				t.Fatalf("ServerTimingDesc(%q, %q) = %q, %v", s, name, desc, ok)
			}
		}
	})
}
