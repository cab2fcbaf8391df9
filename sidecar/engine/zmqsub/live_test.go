package zmqsub_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/blockset"
	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/inferrail/inferrail/sidecar/engine/internal/msgpackfixture"
	"github.com/inferrail/inferrail/sidecar/engine/vllm"
	"github.com/inferrail/inferrail/sidecar/engine/zmqsub"
)

const topic = "kv@pod@m"

// peer is a hand-written engine side: a PUB socket and a replay ROUTER that
// answers from a ring of every batch "published" (sent or deliberately lost).
type peer struct {
	t         *testing.T
	pub       zmq4.Socket
	router    zmq4.Socket
	oldFrames bool // replay framing before vLLM v0.25: [seq, payload]

	mu   sync.Mutex // protects ring
	ring map[uint64][]byte
	low  uint64 // oldest seq kept in the ring
}

func newPeer(t *testing.T, ctx context.Context, replay, oldFrames bool) *peer {
	t.Helper()
	p := &peer{t: t, oldFrames: oldFrames, ring: map[uint64][]byte{}}
	p.pub = zmq4.NewPub(ctx)
	if err := p.pub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.pub.Close() })
	if replay {
		p.router = zmq4.NewRouter(ctx)
		if err := p.router.Listen("tcp://127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.router.Close() })
		go p.serveReplay()
	}
	return p
}

func port(s zmq4.Socket) int { return s.Addr().(*net.TCPAddr).Port }

func (p *peer) serveReplay() {
	for {
		msg, err := p.router.Recv()
		if err != nil {
			return
		}
		if len(msg.Frames) != 3 || len(msg.Frames[2]) != 8 {
			continue // vLLM ignores malformed requests
		}
		id, start := msg.Frames[0], binary.BigEndian.Uint64(msg.Frames[2])
		p.mu.Lock()
		var seqs []uint64
		for s := range p.ring {
			if s >= start && s >= p.low {
				seqs = append(seqs, s)
			}
		}
		p.mu.Unlock()
		sortU64(seqs)
		for _, s := range seqs {
			p.mu.Lock()
			payload := p.ring[s]
			p.mu.Unlock()
			_ = p.router.SendMulti(zmq4.NewMsgFrom(p.frames(id, be(s), payload)...))
		}
		end := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		_ = p.router.SendMulti(zmq4.NewMsgFrom(p.frames(id, end, nil)...))
	}
}

func (p *peer) frames(id, seq, payload []byte) [][]byte {
	if p.oldFrames {
		return [][]byte{id, {}, seq, payload}
	}
	return [][]byte{id, {}, []byte(topic), seq, payload}
}

func sortU64(s []uint64) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func be(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// publish records a batch in the ring and sends it unless lost is set.
func (p *peer) publish(seq uint64, payload []byte, lost bool) {
	p.t.Helper()
	p.mu.Lock()
	p.ring[seq] = payload
	p.mu.Unlock()
	if lost {
		return
	}
	if err := p.pub.SendMulti(zmq4.NewMsgFrom([]byte(topic), be(seq), payload)); err != nil {
		p.t.Fatalf("publish %d: %v", seq, err)
	}
}

// waitSubscribed waits until the subscriber's subscription reached the PUB.
func (p *peer) waitSubscribed() {
	p.t.Helper()
	pub := p.pub.(interface{ Topics() []string })
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for len(pub.Topics()) == 0 {
		select {
		case <-tick.C:
		case <-deadline:
			p.t.Fatal("subscriber never subscribed")
		}
	}
}

// stored is a payload storing one block: tokens [seq*4, seq*4+4) under
// engine hash 1000+seq, chained to the previous seq's block.
func stored(seq uint64) []byte {
	b := msgpackfixture.Hex(`93 ` + msgpackfixture.TS + ` 91 97 "BlockStored" 91 cf`)
	b = append(b, be(1000+seq)...)
	if seq == 0 {
		b = append(b, 0xc0)
	} else {
		b = append(append(b, 0xcf), be(1000+seq-1)...)
	}
	b = append(b, 0x94)
	for i := range uint64(4) {
		b = append(append(b, 0xcd), binary.BigEndian.AppendUint16(nil, uint16(seq*4+i))...)
	}
	return append(b, msgpackfixture.Hex(`04 c0 "GPU" 00`)...)
}

// The payload helper builds what the decoder expects.
func TestStoredPayload(t *testing.T) {
	b, err := vllm.DecodeBatch(stored(2))
	if err != nil {
		t.Fatal(err)
	}
	want := engine.BlockStored{EngineHashes: []uint64{1002}, Parent: ptr(1001), Tokens: []uint32{8, 9, 10, 11},
		BlockSize: 4, Medium: engine.MediumGPU}
	if diff := cmp.Diff([]engine.Event{want}, b.Events); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
}

func ptr(v uint64) *uint64 { return &v }

type got struct {
	Kind     string
	Seq      uint64
	Replayed bool
}

func start(t *testing.T, ctx context.Context, p *peer, replay bool) *zmqsub.Subscriber {
	t.Helper()
	cfg := zmqsub.Config{Host: "127.0.0.1", BasePort: port(p.pub), Topic: "kv@",
		ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond}
	if replay {
		cfg.ReplayBasePort = port(p.router)
	}
	s, err := zmqsub.New(cfg, vllm.DecodeBatch, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

// next reads n updates, applying them to set when it is not nil.
func next(t *testing.T, s *zmqsub.Subscriber, n int, set *blockset.Set) []got {
	t.Helper()
	var out []got
	deadline := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case u := <-s.Updates():
			out = append(out, got{Kind: u.Kind.String(), Seq: u.Batch.Seq, Replayed: u.Replayed})
			if set != nil {
				switch u.Kind {
				case zmqsub.UpdateBatch:
					set.Apply(u.Batch)
				case zmqsub.UpdateRestart:
					set.ClearRank(u.Rank, false)
				case zmqsub.UpdateIncomplete:
					set.ClearRank(u.Rank, true)
				}
			}
		case <-deadline:
			t.Fatalf("timed out after %d updates: %+v", len(out), out)
		}
	}
	return out
}

func TestGapIsFilledByReplay(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old framing %v", old), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := newPeer(t, ctx, true, old)
			s := start(t, ctx, p, true)
			p.waitSubscribed()
			set, _ := blockset.New(blockset.Config{Model: "m", BlockSize: 4}, nil, nil)

			p.publish(0, stored(0), false)
			p.publish(1, stored(1), false)
			p.publish(2, stored(2), true) // lost on the live stream
			p.publish(3, stored(3), true)
			p.publish(4, stored(4), false)
			updates := next(t, s, 5, set)
			p.publish(5, stored(5), false)
			updates = append(updates, next(t, s, 1, set)...)
			want := []got{{"batch", 0, false}, {"batch", 1, false}, {"batch", 2, true}, {"batch", 3, true},
				{"batch", 4, false}, {"batch", 5, false}}
			if diff := cmp.Diff(want, updates); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
			if set.Len() != 6 || set.Incomplete() {
				t.Errorf("block set Len %d Incomplete %v, want 6 complete", set.Len(), set.Incomplete())
			}
			toks := make([]uint32, 24)
			for i := range toks {
				toks[i] = uint32(i)
			}
			for _, h := range kvblock.Hashes(nil, kvblock.NewSeed("m", "", ""), toks, 4) {
				if !set.Contains(h) {
					t.Errorf("missing block %x", h)
				}
			}
			cancel()
		})
	}
}

func TestGapWithoutReplayIsIncomplete(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPeer(t, ctx, false, false)
	s := start(t, ctx, p, false)
	p.waitSubscribed()
	set, _ := blockset.New(blockset.Config{Model: "m", BlockSize: 4}, nil, nil)
	p.publish(0, stored(0), false)
	p.publish(1, stored(1), true)
	p.publish(2, stored(2), false)
	updates := next(t, s, 3, set)
	want := []got{{"batch", 0, false}, {"incomplete", 0, false}, {"batch", 2, false}}
	if diff := cmp.Diff(want, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	// Block 2's parent (block 1) was lost: nothing is held, and the set says so.
	if set.Len() != 0 || !set.Incomplete() {
		t.Errorf("block set Len %d Incomplete %v, want 0 incomplete", set.Len(), set.Incomplete())
	}
	cancel()
}

func TestReplayThatCannotReachBackIsIncomplete(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPeer(t, ctx, true, false)
	s := start(t, ctx, p, true)
	p.waitSubscribed()
	p.publish(0, stored(0), false)
	p.publish(1, stored(1), true)
	p.publish(2, stored(2), true)
	p.publish(3, stored(3), true)
	p.mu.Lock()
	p.low = 3 // the ring was overwritten: 1 and 2 are gone
	p.mu.Unlock()
	p.publish(4, stored(4), false)
	updates := next(t, s, 3, nil)
	want := []got{{"batch", 0, false}, {"incomplete", 0, false}, {"batch", 4, false}}
	if diff := cmp.Diff(want, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	cancel()
}

func TestRestartClearsTheRank(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPeer(t, ctx, false, false)
	s := start(t, ctx, p, false)
	p.waitSubscribed()
	set, _ := blockset.New(blockset.Config{Model: "m", BlockSize: 4}, nil, nil)
	for seq := range uint64(3) {
		p.publish(seq, stored(seq), false)
	}
	next(t, s, 3, set)
	if set.Len() != 3 {
		t.Fatalf("Len = %d before the restart, want 3", set.Len())
	}
	// A new publisher process: seq back to 0, a different first block.
	p.publish(0, msgpackfixture.Hex(`93 `+msgpackfixture.TS+` 91 97 "BlockStored" 91 01 c0 94 05 06 07 08 04 c0 "GPU" 00`), false)
	updates := next(t, s, 2, set)
	want := []got{{"restart", 0, false}, {"batch", 0, false}}
	if diff := cmp.Diff(want, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	h := kvblock.Next(kvblock.NewSeed("m", "", ""), []uint32{5, 6, 7, 8})
	if set.Len() != 1 || !set.Contains(h) || set.Incomplete() {
		t.Errorf("after restart: Len %d, holds new block %v, incomplete %v", set.Len(), set.Contains(h), set.Incomplete())
	}
	cancel()
}

func TestReconnectToRestartedPublisher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPeer(t, ctx, false, false)
	s := start(t, ctx, p, false)
	p.waitSubscribed()
	p.publish(0, stored(0), false)
	p.publish(1, stored(1), false)
	next(t, s, 2, nil)

	// The engine restarts: its PUB closes and a new one binds the same port.
	addr := fmt.Sprintf("tcp://127.0.0.1:%d", port(p.pub))
	p.pub.Close()
	p.pub = zmq4.NewPub(ctx)
	if err := p.pub.Listen(addr); err != nil {
		t.Fatal(err)
	}
	p.waitSubscribed()
	p.publish(0, stored(0), false)
	updates := next(t, s, 2, nil)
	want := []got{{"restart", 0, false}, {"batch", 0, false}}
	if diff := cmp.Diff(want, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	cancel()
}

// After a reconnect, a gap may hide a restart whose new publisher has already
// passed the old sequence numbers: the subscriber replays the whole history
// from 0 and rebuilds the rank from it.
func TestReconnectWithGapReplaysFromZero(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPeer(t, ctx, true, false)
	s := start(t, ctx, p, true)
	p.waitSubscribed()
	set, _ := blockset.New(blockset.Config{Model: "m", BlockSize: 4}, nil, nil)
	p.publish(0, stored(0), false)
	p.publish(1, msgpackfixture.Hex(`93 `+msgpackfixture.TS+` 91 97 "BlockStored" 91 09 c0 94 63 63 63 63 04 c0 "GPU" 00`), false)
	next(t, s, 2, set)

	// The engine restarts; before the subscriber reconnects, the new process
	// publishes 0..2 (lost), then 3 once the subscriber is back.
	addr := fmt.Sprintf("tcp://127.0.0.1:%d", port(p.pub))
	p.pub.Close()
	p.mu.Lock()
	clear(p.ring)
	p.mu.Unlock()
	for seq := range uint64(3) {
		p.publish(seq, stored(seq), true)
	}
	p.pub = zmq4.NewPub(ctx)
	if err := p.pub.Listen(addr); err != nil {
		t.Fatal(err)
	}
	p.waitSubscribed()
	p.publish(3, stored(3), false)
	updates := next(t, s, 5, set)
	want := []got{{"restart", 0, false}, {"batch", 0, true}, {"batch", 1, true}, {"batch", 2, true}, {"batch", 3, false}}
	if diff := cmp.Diff(want, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	// The old process's second block (tokens 99×4) is gone; the new chain is whole.
	if set.Len() != 4 || set.Incomplete() {
		t.Errorf("block set Len %d Incomplete %v, want 4 complete", set.Len(), set.Incomplete())
	}
	cancel()
}
