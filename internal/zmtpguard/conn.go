package zmtpguard

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is a net.Conn whose reads are checked against Limits. Reads must come
// from one goroutine at a time (zmq4 has one reader per connection); writes
// and Close may run concurrently with them.
type Conn struct {
	net.Conn
	lim     Limits
	s       *stream
	pending atomic.Bool // the handshake deadline is set
	err     error       // sticky read error, owned by the reader
	once    sync.Once
}

// Wrap returns c guarded by l (zero fields take their defaults). When the
// handshake timeout is enabled it sets c's deadline, cleared once the peer's
// first command has been read.
func Wrap(c net.Conn, l Limits) *Conn {
	l = l.withDefaults()
	g := &Conn{Conn: c, lim: l, s: newStream(l.MaxMessageBytes)}
	if l.HandshakeTimeout > 0 {
		if err := c.SetDeadline(time.Now().Add(l.HandshakeTimeout)); err == nil {
			g.pending.Store(true)
		}
	}
	return g
}

// Read reads from the connection and checks what it read.
func (c *Conn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if ferr := c.s.feed(p[:n]); ferr != nil {
			var le *LimitError
			if errors.As(ferr, &le) {
				le.Remote = c.remote()
			}
			return 0, c.fail(ferr)
		}
		if c.s.commands > 0 && c.pending.Load() {
			c.pending.Store(false)
			_ = c.Conn.SetDeadline(time.Time{})
		}
	}
	if err != nil && c.pending.Load() && isTimeout(err) {
		return n, c.fail(&handshakeError{remote: c.remote(), after: c.lim.HandshakeTimeout})
	}
	return n, err
}

// Write writes to the connection; a write that times out during the
// handshake fails the connection like a read.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil && c.pending.Load() && isTimeout(err) {
		herr := &handshakeError{remote: c.remote(), after: c.lim.HandshakeTimeout}
		c.once.Do(func() { c.reject(herr) })
		return n, herr
	}
	return n, err
}

// fail records err, closes the connection and reports err once.
func (c *Conn) fail(err error) error {
	c.err = err
	c.once.Do(func() { c.reject(err) })
	return err
}

// reject reports err, then closes the connection (so that whoever sees the
// close also sees the report).
func (c *Conn) reject(err error) {
	if c.lim.OnReject != nil {
		c.lim.OnReject(err)
	}
	_ = c.Conn.Close()
}

func (c *Conn) remote() string {
	if a := c.Conn.RemoteAddr(); a != nil {
		return a.String()
	}
	return "?"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// listener guards every accepted connection.
type listener struct {
	net.Listener
	lim Limits
}

// Accept waits for the next connection and guards it.
func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c, l.lim), nil
}

// Listen wraps ln so that every accepted connection is guarded by l.
func Listen(ln net.Listener, l Limits) net.Listener { return &listener{Listener: ln, lim: l} }
