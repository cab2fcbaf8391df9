package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/inferrail/inferrail/internal/ratelog"
)

// logBridge is an io.Writer for memberlist's *log.Logger: each line like
// "[WARN] memberlist: message" becomes one slog record at the matching level.
// memberlist writes a warning or an error per bad packet or stream (a node
// with the wrong key, a hostile sender), so those go through a rate limit:
// one line per kind (logKey) per logEvery, the next with the count
// suppressed.
type logBridge struct {
	log  *slog.Logger
	warn *ratelog.Logger
}

// logEvery is the least time between two memberlist warnings or errors of
// one kind.
const logEvery = 10 * time.Second

// newStdLogger returns a *log.Logger that writes into l.
func newStdLogger(l *slog.Logger) *log.Logger {
	l = l.With("component", "memberlist")
	return log.New(logBridge{log: l, warn: ratelog.New(l, logEvery)}, "", 0)
}

func (b logBridge) Write(p []byte) (int, error) {
	line := string(bytes.TrimRight(p, "\r\n"))
	level, msg := parseLogLine(line)
	switch {
	case level >= slog.LevelWarn:
		b.warn.LogKey(level, logKey(msg), msg)
	case b.log.Enabled(context.Background(), level):
		b.log.Log(context.Background(), level, msg)
	}
	return len(p), nil
}

// logKey is the kind of a memberlist message: the text before its first
// colon (the cause follows it), without its "from=" part (the peer).
func logKey(msg string) string {
	if i := strings.Index(msg, " from="); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.IndexByte(msg, ':'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// parseLogLine splits memberlist's level prefix from a log line.
func parseLogLine(line string) (slog.Level, string) {
	level := slog.LevelInfo
	for _, p := range []struct {
		prefix string
		level  slog.Level
	}{
		{"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo}, {"[WARN]", slog.LevelWarn},
		{"[ERR]", slog.LevelError}, {"[ERROR]", slog.LevelError},
	} {
		if rest, ok := strings.CutPrefix(line, p.prefix); ok {
			level, line = p.level, rest
			break
		}
	}
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "memberlist: ")
	return level, line
}
