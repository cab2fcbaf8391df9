package kvevents

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// replayed is one message a DEALER received from the replay socket.
type replayed struct {
	Seq    uint64
	Hashes []uint64 // the BlockRemoved hashes of the batch
}

// replayFrom sends a replay request from a DEALER and collects the replies up
// to the end marker, checking the v0.25+ framing of each.
func replayFrom(t *testing.T, dealer zmq4.Socket, start uint64) []replayed {
	t.Helper()
	if err := dealer.SendMulti(zmq4.NewMsgFrom([]byte{}, binary.BigEndian.AppendUint64(nil, start))); err != nil {
		t.Fatalf("send replay request: %v", err)
	}
	var out []replayed
	for {
		frames := recv(t, dealer)
		// A DEALER sees the ROUTER's empty delimiter first.
		if len(frames) != 4 || len(frames[0]) != 0 {
			t.Fatalf("replay reply %q: want 4 frames [\"\", topic, seq, payload]", frames)
		}
		if len(frames[3]) == 0 { // end marker ["", "", END_SEQ, ""]
			if len(frames[1]) != 0 || !bytes.Equal(frames[2], endSeq) {
				t.Fatalf("end marker %q, want [\"\", \"\", ff*8, \"\"]", frames)
			}
			return out
		}
		if string(frames[1]) != "kv-events" || len(frames[2]) != 8 {
			t.Fatalf("replayed batch %q: want topic kv-events and an 8-byte seq", frames[:3])
		}
		_, events, _ := decodeBatch(t, frames[3])
		r := replayed{Seq: binary.BigEndian.Uint64(frames[2])}
		for _, e := range events {
			r.Hashes = append(r.Hashes, e.Hashes...)
		}
		out = append(out, r)
	}
}

func newDealer(t *testing.T, p *Publisher) zmq4.Socket {
	t.Helper()
	d := newSocket(t, zmq4.NewDealer)
	if err := d.Dial(p.ReplayAddr()); err != nil {
		t.Fatalf("dial replay socket: %v", err)
	}
	return d
}

// publishSteps publishes one batch per hash, each a single BlockRemoved.
func publishSteps(p *Publisher, hashes ...uint64) {
	for _, h := range hashes {
		p.BlockRemoved(h)
		p.EndStep(refTS)
	}
}

func TestReplay(t *testing.T) {
	cfg := enabledConfig("inproc://kvevents-test-replay")
	cfg.ReplayEndpoint = "tcp://127.0.0.1:0"
	cfg.BufferSteps = 4
	p := startPublisher(t, cfg, 0, FormatMap)
	publishSteps(p, 100, 101, 102, 103, 104, 105) // seq 0..5; the ring keeps 2..5
	waitPublished(t, p, 6)
	dealer := newDealer(t, p)

	tests := []struct {
		name  string
		start uint64
		want  []replayed
	}{
		{"from the middle", 3, []replayed{{3, []uint64{103}}, {4, []uint64{104}}, {5, []uint64{105}}}},
		{"older than the ring: a visible gap", 0, []replayed{{2, []uint64{102}}, {3, []uint64{103}}, {4, []uint64{104}}, {5, []uint64{105}}}},
		{"the last one", 5, []replayed{{5, []uint64{105}}}},
		{"past the end: only the end marker", 6, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, replayFrom(t, dealer, tt.start)); diff != "" {
				t.Errorf("replay from %d mismatch (-want +got):\n%s", tt.start, diff)
			}
		})
	}
	if got := counterValue(t, p.m.replayRequests); got != float64(len(tests)) {
		t.Errorf("replay_requests_total = %v, want %d", got, len(tests))
	}
}

func TestReplayIgnoresMalformedRequests(t *testing.T) {
	cfg := enabledConfig("inproc://kvevents-test-malformed")
	cfg.ReplayEndpoint = "tcp://127.0.0.1:0"
	p := startPublisher(t, cfg, 0, FormatMap)
	publishSteps(p, 7)
	waitPublished(t, p, 1)
	dealer := newDealer(t, p)

	for _, bad := range [][][]byte{
		{{}, {0, 0, 0, 0, 0, 0, 0, 0}, []byte("extra")}, // 4 frames at the ROUTER
		{binary.BigEndian.AppendUint64(nil, 0)},         // 2 frames (no delimiter)
	} {
		if err := dealer.SendMulti(zmq4.NewMsgFrom(bad...)); err != nil {
			t.Fatal(err)
		}
	}
	// Messages on one connection stay in order: had the malformed requests
	// been answered, those answers would arrive first.
	want := []replayed{{0, []uint64{7}}}
	if diff := cmp.Diff(want, replayFrom(t, dealer, 0)); diff != "" {
		t.Errorf("replay after malformed requests mismatch (-want +got):\n%s", diff)
	}
	if got := counterValue(t, p.m.replayRequests); got != 3 {
		t.Errorf("replay_requests_total = %v, want 3", got)
	}
}

func TestRestart(t *testing.T) {
	sub := newSocket(t, zmq4.NewSub)
	if err := sub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	cfg := enabledConfig("tcp://" + sub.Addr().String())
	cfg.ReplayEndpoint = "tcp://127.0.0.1:0"
	p := startPublisher(t, cfg, 0, FormatArray)
	waitSubscribed(t, p, "")
	dealer := newDealer(t, p)

	publishSteps(p, 1, 2, 3)
	for i := range 3 {
		if seq, _, _ := recvBatch(t, sub, "kv-events"); seq != uint64(i) {
			t.Fatalf("before restart: seq %d, want %d", seq, i)
		}
	}
	p.BlockRemoved(99) // pending at the restart: lost with the old engine
	p.Restart()
	p.EndStep(refTS) // nothing left to send
	publishSteps(p, 10, 11)
	for i, h := range []uint64{10, 11} {
		seq, got, _ := recvBatch(t, sub, "kv-events")
		if seq != uint64(i) || !cmp.Equal(got, []decoded{removed(h)}) {
			t.Fatalf("after restart: seq %d %v, want seq %d [BlockRemoved %d]", seq, got, i, h)
		}
	}
	want := []replayed{{0, []uint64{10}}, {1, []uint64{11}}}
	if diff := cmp.Diff(want, replayFrom(t, dealer, 0)); diff != "" {
		t.Errorf("replay after restart mismatch (-want +got):\n%s", diff)
	}
}

func TestFullQueueDropsWithoutBlocking(t *testing.T) {
	sub := newSocket(t, zmq4.NewSub)
	if err := sub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	cfg := enabledConfig("tcp://" + sub.Addr().String())
	cfg.MaxQueueSize = 2
	p, err := New(cfg, 0, FormatMap, testLogger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	// Nothing drains the queue yet: EndStep must still return every time.
	publishSteps(p, 1, 2, 3, 4, 5)
	if got := counterValue(t, p.m.dropped); got != 3 {
		t.Errorf("dropped_batches_total = %v, want 3", got)
	}
	runPublisher(t, p)
	waitSubscribed(t, p, "")
	// The two queued batches may have gone out before the publisher's
	// connection to the SUB was up; publish a marker and read up to it.
	publishSteps(p, 6)
	var seqs []uint64
	var hashes []uint64
	for {
		seq, got, _ := recvBatch(t, sub, "kv-events")
		seqs = append(seqs, seq)
		hashes = append(hashes, got[0].Hashes...)
		if got[0].Hashes[0] == 6 {
			break
		}
	}
	if seqs[len(seqs)-1] != 2 {
		t.Errorf("marker batch has seq %d, want 2 (two queued batches before it, drops take no seq)", seqs[len(seqs)-1])
	}
	for _, h := range hashes {
		if h >= 3 && h <= 5 {
			t.Errorf("dropped batch %d was published", h)
		}
	}
}

func TestDisabledPublisherDiscards(t *testing.T) {
	for _, js := range []string{`{}`, `{"enable_kv_cache_events": true, "publisher": "null"}`, `{"publisher": "zmq"}`} {
		t.Run(js, func(t *testing.T) {
			cfg, err := ParseConfig(js)
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			p, err := New(cfg, 0, FormatMap, nil, reg)
			if err != nil {
				t.Fatal(err)
			}
			if p.Enabled() {
				t.Fatal("Enabled() = true, want false")
			}
			parent := uint64(1)
			p.BlockStored([]uint64{2}, &parent, []uint32{1}, 1, "")
			p.BlockRemoved(2)
			p.AllBlocksCleared()
			p.EndStep(refTS)
			p.Restart()
			select {
			case <-p.Ready():
			default:
				t.Error("Ready() not closed for a disabled publisher")
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := p.Run(ctx); err != nil {
				t.Errorf("Run() = %v, want nil", err)
			}
			if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
				t.Errorf("disabled publisher registered %d metric families (err %v), want none", len(mfs), err)
			}
		})
	}
}

// TestRestartConcurrentWithSteps restarts the publisher while the engine
// keeps stepping: every received seq continues the previous one or starts
// again at 0, and replay afterwards holds exactly the batches since the last
// restart.
func TestRestartConcurrentWithSteps(t *testing.T) {
	sub := newSocket(t, zmq4.NewSub)
	if err := sub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	cfg := enabledConfig("tcp://" + sub.Addr().String())
	cfg.ReplayEndpoint = "tcp://127.0.0.1:0"
	p := startPublisher(t, cfg, 0, FormatMap)
	waitSubscribed(t, p, "")

	const steps, marker = 300, uint64(1 << 40)
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		for i := range steps {
			publishSteps(p, uint64(i))
		}
	}()
restarts:
	for range 50 {
		select {
		case <-stepped:
			break restarts
		default:
			p.Restart()
			runtime.Gosched()
		}
	}
	<-stepped
	publishSteps(p, marker)

	var seqs []uint64
	for {
		seq, got, _ := recvBatch(t, sub, "kv-events")
		if len(seqs) > 0 && seq != 0 && seq != seqs[len(seqs)-1]+1 {
			t.Fatalf("seq %d after %d: neither the next one nor a restart", seq, seqs[len(seqs)-1])
		}
		seqs = append(seqs, seq)
		if got[0].Hashes[0] == marker {
			break
		}
	}
	last := seqs[len(seqs)-1]
	got := replayFrom(t, newDealer(t, p), 0)
	if uint64(len(got)) != last+1 {
		t.Fatalf("replay returned %d batches, want %d (seq 0..%d since the last restart)", len(got), last+1, last)
	}
	for i, r := range got {
		if r.Seq != uint64(i) {
			t.Fatalf("replayed seq %d at position %d", r.Seq, i)
		}
	}
}

// TestSkipLiveLeavesAGapThatReplayFills: batches skipped by SkipLive take
// their sequence numbers, are not received live, and are replayed.
func TestSkipLiveLeavesAGapThatReplayFills(t *testing.T) {
	sub := newSocket(t, zmq4.NewSub)
	if err := sub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	cfg := enabledConfig("tcp://" + sub.Addr().String())
	cfg.ReplayEndpoint = "tcp://127.0.0.1:0"
	p := startPublisher(t, cfg, 0, FormatMap)
	waitSubscribed(t, p, "")
	dealer := newDealer(t, p)

	publishSteps(p, 1)
	waitPublished(t, p, 1)
	p.SkipLive(2)
	publishSteps(p, 2, 3, 4)
	for _, want := range []uint64{0, 3} {
		if seq, _, _ := recvBatch(t, sub, "kv-events"); seq != want {
			t.Fatalf("live seq %d, want %d (1 and 2 skipped)", seq, want)
		}
	}
	want := []replayed{{1, []uint64{2}}, {2, []uint64{3}}, {3, []uint64{4}}}
	if diff := cmp.Diff(want, replayFrom(t, dealer, 1)); diff != "" {
		t.Errorf("replay of the gap mismatch (-want +got):\n%s", diff)
	}
}
