package zmqsub

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigValidate(t *testing.T) {
	good := Config{Host: "127.0.0.1", BasePort: 5557, Ranks: 2, ReplayBasePort: 6557}.WithDefaults()
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	// Ranks 2–3 of a larger deployment: 5559–5560 and 5561–5562 do not overlap.
	upper := Config{Host: "h", BasePort: 5557, FirstRank: 2, Ranks: 2, ReplayBasePort: 5559}.WithDefaults()
	if err := upper.Validate(); err != nil {
		t.Fatalf("Validate(upper ranks) = %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want []string
	}{
		{"no host", func(c *Config) { c.Host = "" }, []string{"kv_events.host"}},
		{"bad port", func(c *Config) { c.BasePort = 70000 }, []string{"kv_events.base_port"}},
		{"no ranks", func(c *Config) { c.Ranks = 0 }, []string{"kv_events.ranks"}},
		{"replay collides with rank 1", func(c *Config) { c.ReplayBasePort = 5558 }, []string{"overlaps"}},
		{"ports past 65535", func(c *Config) { c.BasePort, c.ReplayBasePort = 65535, 0 }, []string{"exceeds 65535"}},
		{"backoff inverted", func(c *Config) { c.ReconnectMax = time.Millisecond }, []string{"reconnect_max"}},
		{"several at once", func(c *Config) { c.Host, c.Buffer, c.DialTimeout = "", -1, -1 },
			[]string{"kv_events.host", "kv_events.buffer", "kv_events.dial_timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.mod(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate accepted a bad config")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestEndpoints(t *testing.T) {
	c := Config{Host: "10.0.0.7", BasePort: 5557, FirstRank: 2, Ranks: 2}
	got := []string{c.endpoint(c.BasePort, 2), c.endpoint(c.BasePort, 3), Config{Host: "fd00::1"}.endpoint(6557, 1)}
	want := []string{"tcp://10.0.0.7:5559", "tcp://10.0.0.7:5560", "tcp://[fd00::1]:6558"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
}

func TestBackoffGrowsWithinBounds(t *testing.T) {
	lo, hi := 100*time.Millisecond, 5*time.Second
	for n := range 40 {
		d := backoff(lo, hi, n)
		nominal := min(lo<<min(n, 20), hi)
		if d < nominal*8/10 || d > nominal*12/10 {
			t.Errorf("backoff(%d) = %v, want within 20%% of %v", n, d, nominal)
		}
	}
}

func TestReplayFrames(t *testing.T) {
	seq := []byte{0, 0, 0, 0, 0, 0, 0, 9}
	end := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for _, tc := range []struct {
		name    string
		frames  [][]byte
		wantSeq uint64
		wantEnd bool
		wantOK  bool
	}{
		{"v0.25 via DEALER", [][]byte{{}, []byte("t"), seq, {1}}, 9, false, true},
		{"v0.25", [][]byte{[]byte("t"), seq, {1}}, 9, false, true},
		{"old via DEALER", [][]byte{{}, seq, {1}}, 9, false, true},
		{"old", [][]byte{seq, {1}}, 9, false, true},
		{"v0.25 end via DEALER", [][]byte{{}, {}, end, {}}, 1<<64 - 1, true, true},
		{"old end", [][]byte{{}, end, {}}, 1<<64 - 1, true, true},
		{"short seq", [][]byte{{}, {1, 2}, {1}}, 0, false, false},
		{"one frame", [][]byte{seq}, 0, false, false},
		{"too many frames", [][]byte{{}, {}, {}, seq, {1}}, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, p, ok := replayFrames(tc.frames)
			if ok != tc.wantOK || (ok && (s != tc.wantSeq || (len(p) == 0) != tc.wantEnd)) {
				t.Errorf("replayFrames = %d, %x, %v", s, p, ok)
			}
		})
	}
}

func FuzzReplayFrames(f *testing.F) {
	f.Add([]byte{}, []byte("t"), []byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte{1})
	f.Fuzz(func(t *testing.T, a, b, c, d []byte) {
		_, p, ok := replayFrames([][]byte{a, b, c, d})
		if ok && len(c) != 8 {
			t.Fatalf("accepted a %d-byte seq frame", len(c))
		}
		if ok && len(d) > 0 && &p[0] != &d[0] {
			t.Fatal("payload is not the last frame")
		}
	})
}
