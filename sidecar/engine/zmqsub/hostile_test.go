package zmqsub_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/logtest"
	"github.com/inferrail/inferrail/internal/zmtpguard/zmtptest"
	"github.com/inferrail/inferrail/sidecar/engine/vllm"
	"github.com/inferrail/inferrail/sidecar/engine/zmqsub"
)

// hostileListener accepts connections on a free port; for each, it completes
// the ZMTP handshake as socketType, reads one message header's worth if
// readFirst, and sends a frame header declaring 2^40 bytes. Each connection's
// end (the subscriber closing it) is reported on closed.
func hostileListener(t *testing.T, socketType string) (port int, closed <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan error, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				if err := zmtptest.Handshake(c, socketType, true); err != nil {
					ch <- err
					return
				}
				if _, err := c.Write(zmtptest.LongFrameHeader(1 << 40)); err != nil {
					ch <- err
					return
				}
				_, err := io.Copy(io.Discard, c) // until the subscriber closes
				ch <- err
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, ch
}

func waitEnd(t *testing.T, closed <-chan error, what string) {
	t.Helper()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: the subscriber did not close the connection", what)
	}
}

// A publisher that declares a 1 TiB frame is disconnected (not allocated
// for); the subscriber keeps running and reconnects.
func TestPublisherHugeFrameIsRejected(t *testing.T) {
	port, closed := hostileListener(t, "PUB")
	reg := prometheus.NewRegistry()
	var logs logtest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := zmqsub.New(zmqsub.Config{Host: "127.0.0.1", BasePort: port, MaxMessageBytes: 1 << 20,
		ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond}, vllm.DecodeBatch, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitEnd(t, closed, "first connection")
	waitEnd(t, closed, "connection after the reconnect")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	if n := counter(t, reg, "inferrail_sidecar_kvevents_rejected_connections_total"); n < 2 {
		t.Errorf("rejected connections = %v, want >= 2", n)
	}
	if want := "declared a message of 1099511627840 bytes, over the limit of 1048576"; !strings.Contains(logs.String(), want) {
		t.Errorf("log does not say %q:\n%s", want, logs.String())
	}
}

// A replay socket that answers with a 1 TiB frame fails the replay: the gap
// is reported lost and the live stream goes on.
func TestReplayHugeFrameIsRejected(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p := newPeer(t, ctx, false, false)
	replayPort, closed := hostileListener(t, "ROUTER")
	reg := prometheus.NewRegistry()
	s, err := zmqsub.New(zmqsub.Config{Host: "127.0.0.1", BasePort: port(p.pub), ReplayBasePort: replayPort,
		Topic: "kv@", MaxMessageBytes: 1 << 20}, vllm.DecodeBatch, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	p.waitSubscribed()
	p.publish(0, stored(0), false)
	p.publish(1, stored(1), true)
	p.publish(2, stored(2), false)
	updates := next(t, s, 3, nil)
	want := []got{{"batch", 0, false}, {"incomplete", 0, false}, {"batch", 2, false}}
	if diff := cmp.Diff(want, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	waitEnd(t, closed, "replay connection")
	if n := counter(t, reg, "inferrail_sidecar_kvevents_rejected_connections_total"); n != 1 {
		t.Errorf("rejected connections = %v, want 1", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}

// A replay that answers past the live head that triggered it is cut at the
// head: the live batches from there on are applied from the live stream,
// not dropped as duplicates of replayed ones (an engine that publishes
// while it replays does this honestly; a buggy one could answer 146k
// batches).
func TestReplayStopsAtTheLiveHead(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p := newPeer(t, ctx, true, false)
	s := start(t, ctx, p, true)
	p.waitSubscribed()
	p.publish(0, stored(0), false)
	p.publish(1, stored(1), true) // lost: the gap
	p.mu.Lock()
	for seq := uint64(2); seq < 200; seq++ { // the replay ring runs far past the head
		p.ring[seq] = stored(seq)
	}
	p.mu.Unlock()
	p.publish(2, stored(2), false) // the live head that triggers the replay
	updates := next(t, s, 3, nil)
	p.publish(3, stored(3), false)
	updates = append(updates, next(t, s, 1, nil)...)
	want := []got{{"batch", 0, false}, {"batch", 1, true}, {"batch", 2, false}, {"batch", 3, false}}
	if diff := cmp.Diff(want, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	cancel()
}

// An engine (or impostor) that publishes nothing but undecodable batches
// gets a few log lines, not one per batch.
func TestUndecodableBatchesAreLoggedRateLimited(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p := newPeer(t, ctx, false, false)
	var logs logtest.Buffer
	s, err := zmqsub.New(zmqsub.Config{Host: "127.0.0.1", BasePort: port(p.pub), Topic: "kv@"}, vllm.DecodeBatch,
		slog.New(slog.NewTextHandler(&logs, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	p.waitSubscribed()
	const n = 50
	for seq := range uint64(n) {
		p.publish(seq, []byte{0xc1}, false) // 0xc1 is never valid msgpack
	}
	next(t, s, n, nil) // one "incomplete" per batch
	cancel()
	<-done
	out := logs.String()
	lines := strings.Count(out, "undecodable kv event batch")
	// One line per 10 s interval; fewer than 5 unless the 50 batches took 40 s.
	if lines < 1 || lines >= 5 {
		t.Errorf("%d log lines for %d undecodable batches, want 1 and a suppressed count:\n%s", lines, n, out)
	}
}
