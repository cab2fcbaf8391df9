package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/zmtpguard/zmtptest"
)

// zhHugeFrameTo connects to port, completes the ZMTP handshake as socketType
// and declares a 1 TiB frame; it returns once the other side closed the
// connection.
func zhHugeFrameTo(t *testing.T, port int, socketType string) {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(scGuard))
	if err := zmtptest.Handshake(c, socketType, false); err != nil {
		t.Fatalf("handshake with port %d: %v", port, err)
	}
	if _, err := c.Write(zmtptest.LongFrameHeader(1 << 40)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("port %d did not close the connection: %v", port, err)
	}
}

// zhHostileServer accepts connections and, as socketType, declares a 1 TiB
// frame on each; accepted counts them.
func zhHostileServer(t *testing.T, socketType string, accepted *atomic.Int64) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(scGuard))
				if zmtptest.Handshake(c, socketType, true) == nil {
					_, _ = c.Write(zmtptest.LongFrameHeader(1 << 40))
					_, _ = io.Copy(io.Discard, c)
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestSidecarSurvivesHugeZMTPFrames: a peer declaring a 1 TiB ZMTP frame on
// the simulator's PUB or replay port is disconnected while the sidecar
// keeps following the simulator; a sidecar whose event endpoints answer
// with such frames keeps running, reconnecting, and counts the rejections.
func TestSidecarSurvivesHugeZMTPFrames(t *testing.T) {
	bin := scBuild(t)
	sim := scStartSim(t, bin, scFreePort(t), scFreePort(t), scFreePort(t))
	sc := scStartSidecar(t, bin, sim.url, sim.pub, sim.replay)
	scTraffic(t, sc, "before", 6)
	scWait(t, "the sidecar's set to equal the sim's cache", func() error { return scConverged(sim, sc) })

	zhHugeFrameTo(t, sim.pub, "SUB")
	zhHugeFrameTo(t, sim.replay, "DEALER")
	scTraffic(t, sc, "after", 6)
	scWait(t, "the sidecar to follow the sim after the hostile peers", func() error { return scConverged(sim, sc) })

	var pubConns, replayConns atomic.Int64
	pub := zhHostileServer(t, "PUB", &pubConns)
	replay := zhHostileServer(t, "ROUTER", &replayConns)
	victim := scStartSidecar(t, bin, sim.url, pub, replay)
	scWait(t, "the sidecar to reconnect after a rejected frame", func() error {
		if pubConns.Load() < 3 {
			return fmt.Errorf("%d connections to the hostile publisher", pubConns.Load())
		}
		if n := scMetric(t, victim, "inferrail_sidecar_kvevents_rejected_connections_total", ""); n < 2 {
			return fmt.Errorf("rejected connections = %v", n)
		}
		return nil
	})
	resp, err := http.Get(victim.admin + "/healthz")
	if err != nil {
		t.Fatalf("the sidecar is gone: %v", err)
	}
	resp.Body.Close()
	select {
	case <-victim.proc.done:
		t.Fatalf("the sidecar exited: %v", victim.proc.err)
	case <-sim.proc.done:
		t.Fatalf("the sim exited: %v", sim.proc.err)
	default:
	}
}
