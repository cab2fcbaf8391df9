package gossip

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-sockaddr"
	"github.com/hashicorp/memberlist"
)

// netTransport is memberlist's transport over UDP and TCP on one address
// and port (docs/adr/0011-gossip-transport.md). It does what memberlist's
// NetTransport does, but reads each UDP packet into one reused buffer and
// hands memberlist a copy of the packet's own size: NetTransport allocates a
// fresh 64 KiB buffer per packet, which with several balancers exchanging
// their placements and load was most of a balancer's garbage (a CPU profile
// of W6 with 4 balancers: its UDP read loop and the collector took a fifth
// of the balancers' CPU).
type netTransport struct {
	bindIP   net.IP
	tcp      *net.TCPListener
	udp      *net.UDPConn
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	shutdown atomic.Bool
	done     chan struct{} // closed by Shutdown
	wg       sync.WaitGroup
	log      func(format string, args ...any)
}

var _ memberlist.NodeAwareTransport = (*netTransport)(nil)

// maxPacket is the largest UDP payload.
const maxPacket = 65536

// udpReadBuffer is the socket receive buffer asked for (halved until the
// system grants it), as memberlist asks: a burst of announcements must not
// overflow a small default.
const udpReadBuffer = 2 << 20

// newNetTransport listens on ip:port for TCP and UDP (port 0: a free port
// both are free on).
func newNetTransport(ip string, port int, log func(format string, args ...any)) (*netTransport, error) {
	bind := net.ParseIP(ip)
	if bind == nil {
		return nil, fmt.Errorf("bind address %q is not an IP address", ip)
	}
	t := &netTransport{bindIP: bind, packetCh: make(chan *memberlist.Packet), streamCh: make(chan net.Conn),
		done: make(chan struct{}), log: log}
	var err error
	// With port 0 the TCP port picked may be taken for UDP: try a few.
	for attempt := 0; ; attempt++ {
		if t.tcp, err = net.ListenTCP("tcp", &net.TCPAddr{IP: bind, Port: port}); err != nil {
			return nil, err
		}
		p := t.tcp.Addr().(*net.TCPAddr).Port
		if t.udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: bind, Port: p}); err == nil {
			break
		}
		_ = t.tcp.Close()
		if port != 0 || attempt >= 9 {
			return nil, err
		}
	}
	for size := udpReadBuffer; size > 0; size /= 2 {
		if t.udp.SetReadBuffer(size) == nil {
			break
		}
	}
	t.wg.Add(2)
	go t.acceptLoop()
	go t.readLoop()
	return t, nil
}

// Port returns the port the transport listens on.
func (t *netTransport) Port() int { return t.tcp.Addr().(*net.TCPAddr).Port }

// FinalAdvertiseAddr implements memberlist.Transport: the given address, or
// the bound one, or for a wildcard bind the host's private IP.
func (t *netTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip != "" {
		a := net.ParseIP(ip)
		if a == nil {
			return nil, 0, fmt.Errorf("advertise address %q is not an IP address", ip)
		}
		if a4 := a.To4(); a4 != nil {
			a = a4
		}
		return a, port, nil
	}
	if !t.bindIP.IsUnspecified() {
		return t.bindIP, t.Port(), nil
	}
	s, err := sockaddr.GetPrivateIP()
	if err != nil {
		return nil, 0, fmt.Errorf("no private IP to advertise: %w", err)
	}
	if s == "" {
		return nil, 0, errors.New("no private IP to advertise; set the advertise address")
	}
	return net.ParseIP(s), t.Port(), nil
}

// WriteTo implements memberlist.Transport.
func (t *netTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return time.Time{}, err
	}
	_, err = t.udp.WriteTo(b, a)
	return time.Now(), err
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (t *netTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.WriteTo(b, a.Addr)
}

// PacketCh implements memberlist.Transport.
func (t *netTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// DialTimeout implements memberlist.Transport.
func (t *netTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	return d.Dial("tcp", addr)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *netTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(a.Addr, timeout)
}

// StreamCh implements memberlist.Transport.
func (t *netTransport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown implements memberlist.Transport.
func (t *netTransport) Shutdown() error {
	if t.shutdown.Swap(true) {
		return nil
	}
	close(t.done)
	_ = t.tcp.Close()
	_ = t.udp.Close()
	t.wg.Wait()
	return nil
}

func (t *netTransport) acceptLoop() {
	defer t.wg.Done()
	backoff := time.Duration(0)
	for {
		c, err := t.tcp.AcceptTCP()
		if err != nil {
			if t.shutdown.Load() {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t.log("[ERR] gossip: accepting a stream: %v", err)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		select {
		case t.streamCh <- c:
		case <-t.done:
			_ = c.Close()
			return
		}
	}
}

func (t *netTransport) readLoop() {
	defer t.wg.Done()
	buf := make([]byte, maxPacket)
	for {
		n, from, err := t.udp.ReadFrom(buf)
		now := time.Now()
		if err != nil {
			if t.shutdown.Load() {
				return
			}
			t.log("[ERR] gossip: reading a packet: %v", err)
			continue
		}
		if n < 1 {
			continue
		}
		select {
		case t.packetCh <- &memberlist.Packet{Buf: append([]byte(nil), buf[:n]...), From: from, Timestamp: now}:
		case <-t.done:
			return
		}
	}
}
