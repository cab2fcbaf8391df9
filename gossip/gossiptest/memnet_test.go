package gossiptest

import (
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

func TestTransportPackets(t *testing.T) {
	nw := NewNetwork()
	a, b := nw.NewTransport(), nw.NewTransport()
	if a.Addr() == b.Addr() {
		t.Fatalf("two transports share %s", a.Addr())
	}
	buf := []byte("hello")
	if _, err := a.WriteTo(buf, b.Addr()); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'j' // the transport must have copied it
	p := <-b.PacketCh()
	if string(p.Buf) != "hello" || p.From.String() != a.Addr() {
		t.Fatalf("got %q from %s", p.Buf, p.From)
	}
	// Unknown and dead destinations drop silently; a full queue drops and
	// counts, never blocks.
	if _, err := a.WriteTo(buf, "10.9.9.9:7946"); err != nil {
		t.Fatal(err)
	}
	b.Kill()
	if _, err := a.WriteTo(buf, b.Addr()); err != nil {
		t.Fatal(err)
	}
	if len(b.PacketCh()) != 0 {
		t.Fatal("packet delivered to a dead transport")
	}
	b.Revive()
	for range packetQueue + 10 {
		_, _ = a.WriteTo(buf, b.Addr())
	}
	if got := nw.Dropped.Load(); got != 10 {
		t.Fatalf("Dropped = %d, want 10", got)
	}
	// A dead sender sends nothing.
	a.Kill()
	before := len(b.PacketCh())
	_, _ = a.WriteTo(buf, b.Addr())
	if len(b.PacketCh()) != before {
		t.Fatal("dead transport sent a packet")
	}
}

func TestTransportDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNetwork()
		a, b := nw.NewTransport(), nw.NewTransport()
		conn, err := a.DialTimeout(b.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		remote := <-b.StreamCh()
		go func() { _, _ = conn.Write([]byte("ping")) }()
		got := make([]byte, 4)
		if _, err := remote.Read(got); err != nil || string(got) != "ping" {
			t.Fatalf("read %q, %v", got, err)
		}
		_ = conn.Close()
		_ = remote.Close()

		// A dial to a dead node fails after the timeout, not before.
		b.Kill()
		start := time.Now()
		_, err = a.DialTimeout(b.Addr(), 3*time.Second)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("dial to a dead node: %v, want a timeout", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Fatalf("dial failed after %v, want the 3s timeout", d)
		}
		if err := a.Shutdown(); err != nil || !a.Down() {
			t.Fatalf("Shutdown: %v, down %v", err, a.Down())
		}
		if _, err := a.DialTimeout(b.Addr(), time.Second); err == nil {
			t.Fatal("dial from a shut-down transport succeeded")
		}
	})
}

// A dial waiting for an unknown address (or a live one whose inbox is full)
// gives up as soon as the dialing endpoint shuts down, not at its timeout:
// a stopped node must leave no goroutine asleep on a timer in a bubble.
func TestTransportShutdownEndsPendingDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNetwork()
		a := nw.NewTransport()
		start := time.Now()
		errc := make(chan error, 1)
		go func() {
			_, err := a.DialTimeout("10.9.9.9:7946", time.Hour)
			errc <- err
		}()
		synctest.Wait()
		if err := a.Shutdown(); err != nil {
			t.Fatal(err)
		}
		err := <-errc
		if !errors.Is(err, errDown) {
			t.Errorf("pending dial returned %v, want the transport-down error", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("pending dial returned after %v of fake time, want at once", waited)
		}
	})
}
