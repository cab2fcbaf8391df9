package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
)

// logBridge is an io.Writer for memberlist's *log.Logger: each line like
// "[WARN] memberlist: message" becomes one slog record at the matching level.
type logBridge struct {
	log *slog.Logger
}

// newStdLogger returns a *log.Logger that writes into l.
func newStdLogger(l *slog.Logger) *log.Logger {
	return log.New(logBridge{log: l}, "", 0)
}

func (b logBridge) Write(p []byte) (int, error) {
	line := string(bytes.TrimRight(p, "\r\n"))
	level, msg := parseLogLine(line)
	if b.log.Enabled(context.Background(), level) {
		b.log.Log(context.Background(), level, msg, "component", "memberlist")
	}
	return len(p), nil
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
