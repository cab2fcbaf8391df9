package gossip

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// memberlist logs one line per bad packet (a node with the wrong key, a
// hostile sender): the bridge lets one through per interval and counts the
// rest, while distinct messages still get their own line.
func TestLogBridgeLimitsRepeatedLines(t *testing.T) {
	var buf bytes.Buffer
	std := newStdLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	for i := range 100 {
		std.Printf("[ERR] memberlist: Decrypt packet failed: cipher: message authentication failed from=10.0.0.%d:7946", i)
	}
	std.Printf("[WARN] memberlist: Got ping for unexpected node 'x' from=10.0.0.1:7946")
	std.Printf("[INFO] memberlist: Suspect node-1 has failed, no acks received")
	out := buf.String()
	if n := strings.Count(out, "Decrypt packet failed"); n != 1 {
		t.Errorf("%d lines for 100 identical failures, want 1:\n%s", n, out)
	}
	for _, want := range []string{"Got ping for unexpected node", "Suspect node-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestLogKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Decrypt packet failed: cipher: x from=10.0.0.1:7946", "Decrypt packet failed"},
		{"Got ping for unexpected node 'x' from=10.0.0.1:7946", "Got ping for unexpected node 'x'"},
		{"plain", "plain"},
	} {
		if got := logKey(tc.in); got != tc.want {
			t.Errorf("logKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	_ = fmt.Sprint()
}
