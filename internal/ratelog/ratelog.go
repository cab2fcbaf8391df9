// Package ratelog limits repeated log lines: at most one line per key per
// interval, the next one carrying how many were suppressed in between. It is
// for paths a peer can drive once per datagram or batch (a bad gossip
// message, an undecodable event batch), where one line each would let the
// peer flood the log.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// maxKeys bounds the keys tracked; past it, keys quiet for an interval are
// forgotten, and if none is, every new key shares one slot.
const maxKeys = 1024

// Logger logs through an slog.Logger, at most once per key per interval. It
// is safe for concurrent use.
type Logger struct {
	log   *slog.Logger
	every time.Duration

	mu   sync.Mutex // protects keys
	keys map[string]*entry
}

type entry struct {
	last       time.Time
	suppressed int
}

// New returns a Logger that writes to log at most once per key every
// interval. A nil log discards.
func New(log *slog.Logger, every time.Duration) *Logger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Logger{log: log, every: every, keys: map[string]*entry{}}
}

// Warn logs msg at warn level, keyed by msg.
func (l *Logger) Warn(msg string, args ...any) { l.LogKey(slog.LevelWarn, msg, msg, args...) }

// Error logs msg at error level, keyed by msg.
func (l *Logger) Error(msg string, args ...any) { l.LogKey(slog.LevelError, msg, msg, args...) }

// LogKey logs msg at level unless a line with the same key was logged less
// than an interval ago, in which case it only counts it. The line that ends
// a quiet spell gets the attribute "suppressed" with the count.
func (l *Logger) LogKey(level slog.Level, key, msg string, args ...any) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	now := time.Now()
	l.mu.Lock()
	e := l.keys[key]
	if e == nil {
		if len(l.keys) >= maxKeys {
			l.forget(now)
		}
		if len(l.keys) >= maxKeys {
			key = "\x00overflow"
			e = l.keys[key]
		}
		if e == nil {
			e = &entry{}
			l.keys[key] = e
		}
	}
	if !e.last.IsZero() && now.Sub(e.last) < l.every {
		e.suppressed++
		l.mu.Unlock()
		return
	}
	n := e.suppressed
	e.last, e.suppressed = now, 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	l.log.Log(ctx, level, msg, args...)
}

// forget drops keys that have been quiet for an interval (their suppressed
// counts are lost). l.mu must be held.
func (l *Logger) forget(now time.Time) {
	for k, e := range l.keys {
		if now.Sub(e.last) >= l.every {
			delete(l.keys, k)
		}
	}
}
