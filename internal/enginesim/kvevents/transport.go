package kvevents

import (
	"context"
	"net"
	"strings"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"

	"github.com/inferrail/inferrail/internal/zmtpguard"
)

// watchScheme is a zmq4 transport that is guarded TCP (zmtpguard, limits
// from the socket's context), except that a dialled connection reports its
// loss to the dialling socket's connWatch. It exists
// because zmq4's own automatic reconnect deadlocks a PUB socket: the redial
// runs inside the writer goroutine that holds the writer's lock, and adding
// the new connection needs that lock (go-zeromq/zmq4 v0.17.0).
const watchScheme = "inferrail-kvevents-tcp"

func init() {
	if err := zmq4.RegisterTransport(watchScheme, watchTransport{}); err != nil {
		panic(err)
	}
}

// watchKey is the context key under which a socket's connWatch travels: zmq4
// hands the socket's context to the transport's Dial.
type watchKey struct{}

// connWatch signals the loss of a dialled connection.
type connWatch struct {
	lost chan struct{} // buffered 1
}

func newConnWatch() *connWatch { return &connWatch{lost: make(chan struct{}, 1)} }

func (w *connWatch) signal() {
	select {
	case w.lost <- struct{}{}:
	default:
	}
}

// drain forgets a pending signal.
func (w *connWatch) drain() {
	select {
	case <-w.lost:
	default:
	}
}

// watchEndpoint turns "tcp://host:port" into the watched transport's endpoint.
func watchEndpoint(endpoint string) string {
	if rest, ok := strings.CutPrefix(endpoint, "tcp://"); ok {
		return watchScheme + "://" + rest
	}
	return endpoint
}

type watchTransport struct{}

func (watchTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := net.Conn(zmtpguard.Wrap(raw, zmtpguard.LimitsFrom(ctx)))
	w, ok := ctx.Value(watchKey{}).(*connWatch)
	if !ok {
		return c, nil
	}
	return &watchedConn{Conn: c, w: w}, nil
}

func (watchTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return zmtpguard.Listen(ln, zmtpguard.LimitsFrom(ctx)), nil
}

func (watchTransport) Addr(ep string) (string, error) {
	_, _, err := net.SplitHostPort(ep)
	return ep, err
}

// watchedConn reports the first read or write error, or Close, to its watch.
type watchedConn struct {
	net.Conn
	w    *connWatch
	once sync.Once
}

func (c *watchedConn) lost() { c.once.Do(c.w.signal) }

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.lost()
	}
	return n, err
}

func (c *watchedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		c.lost()
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.lost()
	return c.Conn.Close()
}
