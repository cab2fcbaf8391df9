package zmtpguard

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Defaults.
const (
	// DefaultMaxMessageBytes bounds a message read from a peer: vLLM's
	// KV-event batches are KBs to a few MB, so 64 MiB leaves a wide margin.
	DefaultMaxMessageBytes = 64 << 20
	// DefaultHandshakeTimeout bounds the greeting and handshake.
	DefaultHandshakeTimeout = 10 * time.Second
	// FrameOverhead is what each frame counts towards a message's size
	// besides its body: zmq4 keeps a slice header and a body per frame, so a
	// message of many empty frames is bounded too.
	FrameOverhead = 64
)

// Limits bounds one connection.
type Limits struct {
	// MaxMessageBytes bounds one message as read from the peer: the sum of
	// its frames' bodies plus FrameOverhead per frame (a command counts as a
	// message of one frame). 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// HandshakeTimeout bounds the time from the connection to the end of the
	// peer's first command (the NULL mechanism's READY). 0 means
	// DefaultHandshakeTimeout; negative disables the deadline.
	HandshakeTimeout time.Duration
	// OnReject, when set, is called once with the error that failed a
	// connection (a *LimitError, or a handshake timeout). It must not block.
	OnReject func(err error)
}

func (l Limits) withDefaults() Limits {
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if l.HandshakeTimeout == 0 {
		l.HandshakeTimeout = DefaultHandshakeTimeout
	}
	return l
}

type limitsKey struct{}

// WithLimits returns a context carrying l, for the context a zmq4 socket is
// created with.
func WithLimits(ctx context.Context, l Limits) context.Context {
	return context.WithValue(ctx, limitsKey{}, l)
}

// LimitsFrom returns the limits in ctx, or the defaults.
func LimitsFrom(ctx context.Context) Limits {
	l, _ := ctx.Value(limitsKey{}).(Limits)
	return l.withDefaults()
}

// LimitError reports a peer message over the limit. It is a net.Error that is
// not a timeout, so zmq4 closes the connection.
type LimitError struct {
	// Declared is the size the message reached, counted as the limit counts
	// it, with the frame that broke the limit (its body as declared, not read).
	Declared uint64
	// Limit is Limits.MaxMessageBytes.
	Limit int64
	// Remote is the peer's address.
	Remote string
}

// Error implements error.
func (e *LimitError) Error() string {
	return fmt.Sprintf("zmtp peer %s declared a message of %d bytes, over the limit of %d: connection closed",
		e.Remote, e.Declared, e.Limit)
}

// Timeout implements net.Error: false.
func (e *LimitError) Timeout() bool { return false }

// Temporary implements net.Error: false.
func (e *LimitError) Temporary() bool { return false }

// ErrHandshakeTimeout is wrapped by the error of a connection whose peer did
// not complete the handshake in time.
var ErrHandshakeTimeout = errors.New("zmtp handshake timed out")

// handshakeError wraps ErrHandshakeTimeout as a net.Error that is not a
// timeout, so zmq4 closes the connection rather than waiting on it.
type handshakeError struct {
	remote string
	after  time.Duration
}

func (e *handshakeError) Error() string {
	return fmt.Sprintf("zmtp peer %s: %v after %v: connection closed", e.remote, ErrHandshakeTimeout, e.after)
}
func (e *handshakeError) Unwrap() error   { return ErrHandshakeTimeout }
func (e *handshakeError) Timeout() bool   { return false }
func (e *handshakeError) Temporary() bool { return false }
