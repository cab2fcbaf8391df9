package kvevents

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// testDeadline bounds every wait and receive in these tests; they stop by
// themselves if the publisher misbehaves.
const testDeadline = 20 * time.Second

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func enabledConfig(endpoint string) Config {
	cfg := DefaultConfig()
	cfg.EnableKVCacheEvents = true
	cfg.Publisher = PublisherZMQ
	cfg.Endpoint = endpoint
	cfg.Topic = "kv-events"
	return cfg
}

// startPublisher creates and runs a publisher until the test ends.
func startPublisher(t *testing.T, cfg Config, rank int, f Format) *Publisher {
	t.Helper()
	p, err := New(cfg, rank, f, testLogger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("New() error: %v", err)
	}
	runPublisher(t, p)
	return p
}

func runPublisher(t *testing.T, p *Publisher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}
	})
	select {
	case <-p.Ready():
	case err := <-done:
		t.Fatalf("Run() returned early: %v", err)
	case <-time.After(testDeadline):
		t.Fatal("publisher not ready")
	}
}

// waitFor polls cond until it holds or the test deadline passes. It is a
// wait for a state, not a timing assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(testDeadline)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitSubscribed waits until the PUB socket has a subscriber to topic, so the
// next batch is not lost to ZMQ's slow-joiner effect.
func waitSubscribed(t *testing.T, p *Publisher, topic string) {
	t.Helper()
	waitFor(t, "subscription "+strconv.Quote(topic), func() bool {
		p.ringMu.Lock()
		s := p.socks
		p.ringMu.Unlock()
		return s != nil && slices.Contains(s.pub.(zmq4.Topics).Topics(), topic)
	})
}

func waitPublished(t *testing.T, p *Publisher, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d published batches", n), func() bool {
		return counterValue(t, p.m.batches) >= float64(n)
	})
}

// newSocket returns a zmq4 socket whose receives fail after the test deadline.
func newSocket(t *testing.T, mk func(context.Context, ...zmq4.Option) zmq4.Socket) zmq4.Socket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	s := mk(ctx)
	t.Cleanup(func() { _ = s.Close(); cancel() })
	return s
}

func recv(t *testing.T, s zmq4.Socket) [][]byte {
	t.Helper()
	msg, err := s.Recv()
	if err != nil {
		t.Fatalf("Recv() error: %v", err)
	}
	return msg.Frames
}

// recvBatch receives one live message and checks its framing.
func recvBatch(t *testing.T, sub zmq4.Socket, topic string) (seq uint64, events []decoded, rank uint64) {
	t.Helper()
	frames := recv(t, sub)
	if len(frames) != 3 {
		t.Fatalf("got %d frames, want 3 [topic, seq, payload]", len(frames))
	}
	if string(frames[0]) != topic {
		t.Errorf("topic frame = %q, want %q", frames[0], topic)
	}
	if len(frames[1]) != 8 {
		t.Fatalf("seq frame has %d bytes, want 8", len(frames[1]))
	}
	_, events, rank = decodeBatch(t, frames[2])
	return binary.BigEndian.Uint64(frames[1]), events, rank
}

func removed(h uint64) decoded {
	return decoded{Type: "BlockRemoved", Hashes: []uint64{h}, Medium: "GPU"}
}

func TestPublisherLiveSUB(t *testing.T) {
	for _, f := range []Format{FormatMap, FormatArray} {
		t.Run(string(f), func(t *testing.T) {
			// The SUB binds and the publisher connects (endpoint without "*").
			sub := newSocket(t, zmq4.NewSub)
			if err := sub.Listen("tcp://127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			if err := sub.SetOption(zmq4.OptionSubscribe, "kv"); err != nil {
				t.Fatal(err)
			}
			p := startPublisher(t, enabledConfig("tcp://"+sub.Addr().String()), 0, f)
			waitSubscribed(t, p, "kv")

			parent := uint64(42)
			hashes, tokens := []uint64{1, 2}, []uint32{10, 11, 12, 13}
			p.BlockStored(hashes, &parent, tokens, 2, "")
			hashes[0], tokens[0], parent = 99, 99, 99 // the publisher keeps copies
			p.EndStep(refTS)
			p.EndStep(refTS.Add(time.Millisecond)) // no events: no batch
			p.BlockRemoved(7)
			p.BlockRemoved(8)
			p.EndStep(refTS.Add(2 * time.Millisecond))
			p.AllBlocksCleared()
			p.EndStep(refTS.Add(3 * time.Millisecond))

			p42 := uint64(42)
			want := [][]decoded{
				{{Type: "BlockStored", Hashes: []uint64{1, 2}, Parent: &p42, Tokens: []uint64{10, 11, 12, 13}, BlockSize: 2,
					Medium: "GPU", ExtraKeys: []any{nil, nil}}},
				{removed(7), removed(8)},
				{{Type: "AllBlocksCleared"}},
			}
			for i, w := range want {
				seq, got, rank := recvBatch(t, sub, "kv-events")
				if seq != uint64(i) || rank != 0 {
					t.Errorf("batch %d: seq %d rank %d, want seq %d rank 0", i, seq, rank, i)
				}
				if diff := cmp.Diff(w, got); diff != "" {
					t.Errorf("batch %d mismatch (-want +got):\n%s", i, diff)
				}
			}
			waitPublished(t, p, 3)
			for typ, n := range map[EventType]float64{BlockStored: 1, BlockRemoved: 2, AllBlocksCleared: 1} {
				if got := counterValue(t, p.m.byType[typ]); got != n {
					t.Errorf("events_total{type=%s} = %v, want %v", typ, got, n)
				}
			}
		})
	}
}

func TestPublisherWildcardBindAndTopicFilter(t *testing.T) {
	// "tcp://*:0" binds every interface on a free port; zmq4 gets "0.0.0.0".
	a := startPublisher(t, enabledConfig("tcp://*:0"), 0, FormatMap)
	bCfg := enabledConfig("tcp://*:0")
	bCfg.Topic = "other"
	b := startPublisher(t, bCfg, 0, FormatMap)
	dial := func(p *Publisher) string {
		_, port, err := net.SplitHostPort(p.Addr()[len("tcp://"):])
		if err != nil {
			t.Fatalf("Addr() = %q: %v", p.Addr(), err)
		}
		return "tcp://127.0.0.1:" + port
	}

	match := newSocket(t, zmq4.NewSub)  // subscribed to a's topic prefix
	filter := newSocket(t, zmq4.NewSub) // subscribed to "other" only, on both
	for _, step := range []error{
		match.Dial(dial(a)), match.SetOption(zmq4.OptionSubscribe, "kv-"),
		filter.Dial(dial(a)), filter.Dial(dial(b)), filter.SetOption(zmq4.OptionSubscribe, "other"),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	waitSubscribed(t, a, "kv-")
	waitSubscribed(t, a, "other")
	waitSubscribed(t, b, "other")

	a.BlockRemoved(1)
	a.EndStep(refTS)
	if seq, got, _ := recvBatch(t, match, "kv-events"); seq != 0 || !cmp.Equal(got, []decoded{removed(1)}) {
		t.Errorf("prefix subscriber got seq %d %v", seq, got)
	}
	b.BlockRemoved(2)
	b.EndStep(refTS)
	// a's batch was filtered out: the first message filter sees is b's.
	if seq, got, _ := recvBatch(t, filter, "other"); seq != 0 || !cmp.Equal(got, []decoded{removed(2)}) {
		t.Errorf("filtering subscriber got seq %d %v, want b's batch", seq, got)
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestPublisherDataParallelRankPorts(t *testing.T) {
	t.Run("connect", func(t *testing.T) {
		sub := newSocket(t, zmq4.NewSub)
		if err := sub.Listen("tcp://127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
			t.Fatal(err)
		}
		port := sub.Addr().(*net.TCPAddr).Port
		// Base port + rank 1 is where the SUB listens.
		p := startPublisher(t, enabledConfig("tcp://127.0.0.1:"+strconv.Itoa(port-1)), 1, FormatMap)
		if want := "tcp://127.0.0.1:" + strconv.Itoa(port); p.Endpoint() != want {
			t.Fatalf("Endpoint() = %q, want %q", p.Endpoint(), want)
		}
		waitSubscribed(t, p, "")
		p.BlockRemoved(5)
		p.EndStep(refTS)
		if seq, _, rank := recvBatch(t, sub, "kv-events"); seq != 0 || rank != 1 {
			t.Errorf("got seq %d rank %d, want seq 0 rank 1", seq, rank)
		}
	})
	t.Run("bind", func(t *testing.T) {
		pubPort, replayPort := freePort(t), freePort(t)
		cfg := enabledConfig("tcp://*:" + strconv.Itoa(pubPort-2))
		cfg.ReplayEndpoint = "tcp://127.0.0.1:" + strconv.Itoa(replayPort-2)
		p := startPublisher(t, cfg, 2, FormatMap)
		// Go reports a 0.0.0.0 listener as [::] on dual-stack hosts.
		if want := ":" + strconv.Itoa(pubPort); !strings.HasSuffix(p.Addr(), want) {
			t.Errorf("Addr() = %q, want port %d", p.Addr(), pubPort)
		}
		if want := "tcp://127.0.0.1:" + strconv.Itoa(replayPort); p.ReplayAddr() != want {
			t.Errorf("ReplayAddr() = %q, want %q", p.ReplayAddr(), want)
		}
		sub := newSocket(t, zmq4.NewSub)
		if err := sub.Dial("tcp://127.0.0.1:" + strconv.Itoa(pubPort)); err != nil {
			t.Fatal(err)
		}
		if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
			t.Fatal(err)
		}
		waitSubscribed(t, p, "")
		p.AllBlocksCleared()
		p.EndStep(refTS)
		if seq, _, rank := recvBatch(t, sub, "kv-events"); seq != 0 || rank != 2 {
			t.Errorf("got seq %d rank %d, want seq 0 rank 2", seq, rank)
		}
	})
}

func TestPublisherSocketErrors(t *testing.T) {
	cfg := enabledConfig("inproc://kvevents-test-dup")
	cfg.ReplayEndpoint = "tcp://127.0.0.1:0"
	first := startPublisher(t, cfg, 0, FormatMap)

	cfg.Endpoint = "inproc://kvevents-test-dup2"
	cfg.ReplayEndpoint = first.ReplayAddr() // already bound
	p, err := New(cfg, 0, FormatMap, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := p.Run(ctx); err == nil {
		t.Fatal("Run() on a port in use succeeded, want an error")
	}
	if err := first.Run(ctx); err == nil {
		t.Fatal("second Run() succeeded, want an error")
	}
}

// counterValue reads a counter's current value.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatalf("read counter: %v", err)
	}
	return m.GetCounter().GetValue()
}

func TestPublisherReconnects(t *testing.T) {
	t.Run("connect mode redials a restarted subscriber", func(t *testing.T) {
		sub := newSocket(t, zmq4.NewSub)
		if err := sub.Listen("tcp://127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		addr := "tcp://" + sub.Addr().String()
		if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
			t.Fatal(err)
		}
		p, err := New(enabledConfig(addr), 0, FormatMap, testLogger(t), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		p.retry = 20 * time.Millisecond
		runPublisher(t, p)
		waitSubscribed(t, p, "")
		publishSteps(p, 1)
		recvBatch(t, sub, "kv-events")

		_ = sub.Close()
		publishSteps(p, 2) // into the void
		waitPublished(t, p, 2)
		sub2 := newSocket(t, zmq4.NewSub)
		if err := sub2.Listen(addr); err != nil {
			t.Fatal(err)
		}
		if err := sub2.SetOption(zmq4.OptionSubscribe, "kv"); err != nil {
			t.Fatal(err)
		}
		waitSubscribed(t, p, "kv")
		publishSteps(p, 3)
		if seq, got, _ := recvBatch(t, sub2, "kv-events"); seq != 2 || !cmp.Equal(got, []decoded{removed(3)}) {
			t.Errorf("after reconnect: seq %d %v, want seq 2 [BlockRemoved 3]", seq, got)
		}
	})
	t.Run("bind mode serves a new subscriber", func(t *testing.T) {
		p := startPublisher(t, enabledConfig("tcp://*:0"), 0, FormatMap)
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(p.Addr(), "tcp://"))
		dial := "tcp://127.0.0.1:" + port
		sub := newSocket(t, zmq4.NewSub)
		if err := sub.Dial(dial); err != nil {
			t.Fatal(err)
		}
		if err := sub.SetOption(zmq4.OptionSubscribe, "a"); err != nil {
			t.Fatal(err)
		}
		waitSubscribed(t, p, "a")
		_ = sub.Close()
		publishSteps(p, 1, 2) // the writer meets the closed connection
		waitPublished(t, p, 2)
		sub2 := newSocket(t, zmq4.NewSub)
		if err := sub2.Dial(dial); err != nil {
			t.Fatal(err)
		}
		if err := sub2.SetOption(zmq4.OptionSubscribe, "kv"); err != nil {
			t.Fatal(err)
		}
		waitSubscribed(t, p, "kv")
		publishSteps(p, 3)
		if seq, got, _ := recvBatch(t, sub2, "kv-events"); seq != 2 || !cmp.Equal(got, []decoded{removed(3)}) {
			t.Errorf("new subscriber: seq %d %v, want seq 2 [BlockRemoved 3]", seq, got)
		}
	})
}
