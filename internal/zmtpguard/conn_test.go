package zmtpguard

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inferrail/inferrail/internal/zmtpguard/zmtptest"
)

func TestConnRejectsAHugeFrame(t *testing.T) {
	ours, peer := net.Pipe()
	defer peer.Close()
	var rejected atomic.Int32
	c := Wrap(ours, Limits{MaxMessageBytes: 1 << 20, OnReject: func(error) { rejected.Add(1) }})
	go func() {
		_, _ = peer.Write(append(append(zmtptest.Greeting(true), zmtptest.Ready("PUB")...), zmtptest.LongFrameHeader(1<<40)...))
	}()
	buf := make([]byte, 16)
	var err error
	for err == nil {
		_, err = c.Read(buf)
	}
	var le *LimitError
	if !errors.As(err, &le) || le.Declared != 1<<40+FrameOverhead || le.Limit != 1<<20 {
		t.Fatalf("Read = %v, want a LimitError for 2^40 bytes", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || ne.Timeout() {
		t.Errorf("the error is not a non-timeout net.Error (zmq4 would not close the connection): %T", err)
	}
	if _, err := c.Read(buf); !errors.As(err, &le) {
		t.Errorf("second Read = %v, want the same error", err)
	}
	if _, err := peer.Read(buf); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("peer Read = %v, want the connection closed", err)
	}
	if n := rejected.Load(); n != 1 {
		t.Errorf("OnReject called %d times, want 1", n)
	}
}

func TestConnHandshakeDeadline(t *testing.T) {
	t.Run("silent peer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ours, peer := net.Pipe()
			defer peer.Close()
			c := Wrap(ours, Limits{HandshakeTimeout: 20 * time.Millisecond})
			_, err := c.Read(make([]byte, 64))
			var ne net.Error
			if !errors.Is(err, ErrHandshakeTimeout) || !errors.As(err, &ne) || ne.Timeout() {
				t.Errorf("Read = %v, want a non-timeout net.Error wrapping ErrHandshakeTimeout", err)
			}
		})
	})
	t.Run("cleared after the peer's READY", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ours, peer := net.Pipe()
			defer peer.Close()
			c := Wrap(ours, Limits{HandshakeTimeout: 20 * time.Millisecond})
			hello := append(zmtptest.Greeting(true), zmtptest.Ready("PUB")...)
			go func() { _, _ = peer.Write(hello) }()
			if _, err := io.ReadFull(c, make([]byte, len(hello))); err != nil {
				t.Fatal(err)
			}
			// The peer sends its next frame well after the handshake deadline.
			late := make(chan error, 1)
			go func() {
				time.Sleep(time.Minute) // fake time: long past the handshake deadline
				_, err := peer.Write([]byte{0, 1, 'x'})
				late <- err
			}()
			if _, err := io.ReadFull(c, make([]byte, 3)); err != nil {
				t.Errorf("read after the handshake = %v, want the frame", err)
			}
			if err := <-late; err != nil {
				t.Error(err)
			}
		})
	})
}
