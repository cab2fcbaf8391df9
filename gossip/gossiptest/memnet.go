package gossiptest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Network is an in-memory network of Transports. The zero Network is not
// usable; call NewNetwork.
type Network struct {
	mu    sync.Mutex // protects nodes and next
	nodes map[string]*Transport
	next  int

	// Dropped counts packets dropped because a receiver's queue was full.
	Dropped atomic.Int64
}

// NewNetwork returns an empty network.
func NewNetwork() *Network {
	return &Network{nodes: make(map[string]*Transport)}
}

// Transport is one node's endpoint on a Network; it implements
// memberlist.Transport.
type Transport struct {
	nw       *Network
	ip       net.IP
	port     int
	addr     string
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	down     atomic.Bool
	shutOnce sync.Once
	shut     chan struct{} // closed by Shutdown: pending dials give up
}

var _ memberlist.Transport = (*Transport)(nil)

// packetQueue and streamQueue size each transport's inboxes.
const (
	packetQueue = 8192
	streamQueue = 256
)

// NewTransport adds an endpoint with a fresh address (10.x.y.z:7946).
func (nw *Network) NewTransport() *Transport {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.next++
	ip := net.IPv4(10, byte(nw.next>>16), byte(nw.next>>8), byte(nw.next))
	t := &Transport{
		nw:       nw,
		ip:       ip,
		port:     7946,
		packetCh: make(chan *memberlist.Packet, packetQueue),
		streamCh: make(chan net.Conn, streamQueue),
		shut:     make(chan struct{}),
	}
	t.addr = net.JoinHostPort(ip.String(), "7946")
	nw.nodes[t.addr] = t
	return t
}

func (nw *Network) lookup(addr string) *Transport {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	t := nw.nodes[addr]
	if t == nil || t.down.Load() {
		return nil
	}
	return t
}

// Addr returns the transport's address (host:port).
func (t *Transport) Addr() string { return t.addr }

// Kill takes the endpoint off the network at once: it neither sends nor
// receives, and dials to it time out. Its memberlist keeps running until
// shut down (which a killed process would not do).
func (t *Transport) Kill() { t.down.Store(true) }

// Revive puts a killed endpoint back on the network (a healed partition).
// It must not be used after the node shut down.
func (t *Transport) Revive() { t.down.Store(false) }

// Down reports whether the endpoint was killed or shut down.
func (t *Transport) Down() bool { return t.down.Load() }

// FinalAdvertiseAddr implements memberlist.Transport.
func (t *Transport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return t.ip, t.port, nil
}

// WriteTo implements memberlist.Transport. It never blocks: undeliverable
// packets are dropped.
func (t *Transport) WriteTo(b []byte, addr string) (time.Time, error) {
	now := time.Now()
	if t.down.Load() {
		return now, nil
	}
	dst := t.nw.lookup(addr)
	if dst == nil {
		return now, nil
	}
	p := &memberlist.Packet{Buf: bytes.Clone(b), From: &net.UDPAddr{IP: t.ip, Port: t.port}, Timestamp: now}
	select {
	case dst.packetCh <- p:
	default:
		t.nw.Dropped.Add(1)
	}
	return now, nil
}

// PacketCh implements memberlist.Transport.
func (t *Transport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// errTimeout is a dial timeout, reported as a net.Error.
type errTimeout struct{ addr string }

func (e errTimeout) Error() string   { return fmt.Sprintf("dial %s: i/o timeout", e.addr) }
func (e errTimeout) Timeout() bool   { return true }
func (e errTimeout) Temporary() bool { return true }

// DialTimeout implements memberlist.Transport: a connection to a live node
// is a net.Pipe handed to its StreamCh; a node that is down or unknown makes
// the dial wait for the timeout and fail. A dial pending when this
// endpoint shuts down fails at once, so a stopped node leaves no goroutine
// waiting on a timer (which a synctest bubble would call a deadlock).
func (t *Transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.down.Load() {
		return nil, errDown
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	dst := t.nw.lookup(addr)
	if dst == nil {
		select {
		case <-timer.C:
			return nil, errTimeout{addr}
		case <-t.shut:
			return nil, errDown
		}
	}
	local, remote := net.Pipe()
	select {
	case dst.streamCh <- remote:
		return local, nil
	case <-timer.C:
		_ = local.Close()
		_ = remote.Close()
		return nil, errTimeout{addr}
	case <-t.shut:
		_ = local.Close()
		_ = remote.Close()
		return nil, errDown
	}
}

// errDown is a dial from an endpoint that is down.
var errDown = errors.New("transport is down")

// StreamCh implements memberlist.Transport.
func (t *Transport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown implements memberlist.Transport: the endpoint goes down.
func (t *Transport) Shutdown() error {
	t.down.Store(true)
	t.shutOnce.Do(func() { close(t.shut) })
	return nil
}
