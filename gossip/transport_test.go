package gossip

import (
	"io"
	"net"
	"testing"
	"time"
)

func testTransport(t *testing.T) *netTransport {
	t.Helper()
	tr, err := newNetTransport("127.0.0.1", 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown() })
	return tr
}

// Each packet reaches memberlist as its own slice of its own size: the read
// buffer is reused, so a packet must never alias the next one.
func TestTransportPacketsAreCopies(t *testing.T) {
	a, b := testTransport(t), testTransport(t)
	to := b.udp.LocalAddr().String()
	for _, msg := range []string{"first packet", "2nd"} {
		if _, err := a.WriteTo([]byte(msg), to); err != nil {
			t.Fatal(err)
		}
	}
	var got [][]byte
	for range 2 {
		select {
		case p := <-b.PacketCh():
			got = append(got, p.Buf)
			if p.From.String() != a.udp.LocalAddr().String() || p.Timestamp.IsZero() {
				t.Errorf("packet from %v at %v", p.From, p.Timestamp)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no packet")
		}
	}
	if string(got[0]) != "first packet" || string(got[1]) != "2nd" || cap(got[0]) > 64 {
		t.Errorf("packets %q (cap %d), want the two messages, each its own size", got, cap(got[0]))
	}
}

// A stream dialled to the transport comes out of StreamCh; Shutdown returns
// while nobody reads the channels.
func TestTransportStreamsAndShutdown(t *testing.T) {
	a, b := testTransport(t), testTransport(t)
	c, err := a.DialTimeout(b.tcp.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-b.StreamCh():
		buf := make([]byte, 5)
		if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "hello" {
			t.Errorf("stream read %q, %v", buf, err)
		}
		s.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no stream")
	}
	// A packet and a stream nobody takes, then Shutdown.
	if _, err := a.WriteTo([]byte("x"), b.udp.LocalAddr().String()); err != nil {
		t.Fatal(err)
	}
	c2, err := net.Dial("tcp", b.tcp.Addr().String())
	if err == nil {
		defer c2.Close()
	}
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { _ = b.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown hung with a packet and a stream untaken")
	}
}

// The advertised address: the one given, else the bound one, and the bound
// port where none is given.
func TestTransportAdvertise(t *testing.T) {
	tr := testTransport(t)
	ip, port, err := tr.FinalAdvertiseAddr("", 0)
	if err != nil || ip.String() != "127.0.0.1" || port != tr.Port() {
		t.Errorf("no advertise address: %v:%d, %v; want the bound 127.0.0.1:%d", ip, port, err, tr.Port())
	}
	ip, port, err = tr.FinalAdvertiseAddr("10.1.2.3", 7000)
	if err != nil || ip.String() != "10.1.2.3" || len(ip) != 4 || port != 7000 {
		t.Errorf("given 10.1.2.3:7000: %v (%d bytes):%d, %v", ip, len(ip), port, err)
	}
	if _, _, err := tr.FinalAdvertiseAddr("not-an-ip", 1); err == nil {
		t.Error("advertise address not-an-ip accepted")
	}
	if _, err := newNetTransport("not-an-ip", 0, t.Logf); err == nil {
		t.Error("bind address not-an-ip accepted")
	}
}
