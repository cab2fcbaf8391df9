package ratelog

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestOneLinePerKeyPerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			},
		})), time.Second)
		for range 100 {
			l.Warn("bad datagram", "from", "a")
		}
		l.Error("other line")
		time.Sleep(time.Second) // fake time: one interval
		l.Warn("bad datagram", "from", "b")
		l.Warn("bad datagram", "from", "c")
		want := strings.Join([]string{
			`level=WARN msg="bad datagram" from=a`,
			`level=ERROR msg="other line"`,
			`level=WARN msg="bad datagram" from=b suppressed=99`,
			``,
		}, "\n")
		if got := buf.String(); got != want {
			t.Errorf("log:\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestKeysAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		l := New(slog.New(slog.NewTextHandler(&buf, nil)), time.Minute)
		for i := range 10 * maxKeys {
			l.LogKey(slog.LevelWarn, fmt.Sprint("peer-", i), "bad datagram")
		}
		if n := len(l.keys); n > maxKeys+1 {
			t.Errorf("%d keys tracked, want at most %d", n, maxKeys+1)
		}
		if lines := strings.Count(buf.String(), "\n"); lines != maxKeys+1 {
			t.Errorf("%d lines, want %d (one per tracked key, then one for the rest)", lines, maxKeys+1)
		}
	})
}

func TestDisabledLevelCostsNothing(t *testing.T) {
	l := New(slog.New(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelError})), time.Minute)
	l.Warn("x")
	if len(l.keys) != 0 {
		t.Error("a disabled level was tracked")
	}
	if n := testing.AllocsPerRun(100, func() { l.Warn("x", "k", 1) }); n > 1 {
		t.Errorf("%v allocations per disabled call", n)
	}
}
