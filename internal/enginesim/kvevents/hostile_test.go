package kvevents

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/zmtpguard/zmtptest"
)

// hostilePeer connects to addr ("tcp://h:p"), completes the ZMTP handshake as
// socketType and sends a frame header declaring 2^40 bytes. It returns the
// connection, which the publisher is expected to close.
func hostilePeer(t *testing.T, addr, socketType string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(addr, "tcp://"))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(testDeadline))
	if err := zmtptest.Handshake(c, socketType, false); err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	if _, err := c.Write(zmtptest.LongFrameHeader(1 << 40)); err != nil {
		t.Fatalf("send huge frame header: %v", err)
	}
	return c
}

// waitClosed waits until the peer closed c (a read returns an error).
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	var b [256]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the publisher did not close the hostile connection")
			}
			return
		}
	}
}

// A peer declaring a 1 TiB frame on the PUB or the replay port is
// disconnected; the process survives and other subscribers keep receiving.
func TestPublisherRejectsHugeFrames(t *testing.T) {
	cfg := enabledConfig("tcp://127.0.0.1:0")
	cfg.Endpoint = "tcp://*:0"
	cfg.ReplayEndpoint = "tcp://*:0"
	p := startPublisher(t, cfg, 0, FormatMap)
	addr := strings.Replace(p.Addr(), "0.0.0.0", "127.0.0.1", 1)
	replayAddr := strings.Replace(p.ReplayAddr(), "0.0.0.0", "127.0.0.1", 1)

	sub := newSocket(t, zmq4.NewSub)
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	if err := sub.Dial(addr); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, p, "")

	waitClosed(t, hostilePeer(t, addr, "SUB"))
	waitClosed(t, hostilePeer(t, replayAddr, "DEALER"))

	p.BlockRemoved(7)
	p.EndStep(refTS)
	if seq, events, _ := recvBatch(t, sub, "kv-events"); seq != 0 || len(events) != 1 {
		t.Errorf("after the hostile peers: batch seq %d with %d events, want seq 0 with 1", seq, len(events))
	}
	d := newDealer(t, &Publisher{replayAddr: replayAddr})
	if got := replayFrom(t, d, 0); len(got) != 1 {
		t.Errorf("replay after the hostile peers returned %d batches, want 1", len(got))
	}
	if got := counterValue(t, p.m.rejected); got != 2 {
		t.Errorf("rejected connections = %v, want 2", got)
	}
}

// A peer that connects and stays silent does not keep others from
// connecting (zmq4 greets each accepted connection before the next).
func TestPublisherSilentPeerDoesNotBlockAccept(t *testing.T) {
	p, err := New(enabledConfig("tcp://*:0"), 0, FormatMap, testLogger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	p.guard.HandshakeTimeout = 200 * time.Millisecond
	runPublisher(t, p)
	addr := strings.Replace(p.Addr(), "0.0.0.0", "127.0.0.1", 1)
	silent, err := net.Dial("tcp", strings.TrimPrefix(addr, "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	sub := newSocket(t, zmq4.NewSub)
	_ = sub.SetOption(zmq4.OptionSubscribe, "")
	dialed := make(chan error, 1)
	go func() { dialed <- sub.Dial(addr) }()
	select {
	case err := <-dialed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testDeadline):
		t.Fatal("a silent peer keeps the PUB socket from accepting another subscriber")
	}
	waitSubscribed(t, p, "")
	waitClosed(t, silent)
}
