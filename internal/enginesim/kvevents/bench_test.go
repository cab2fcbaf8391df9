package kvevents

import (
	"context"
	"runtime"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/prometheus/client_golang/prometheus"
)

// benchStep is a typical busy engine step: 8 requests each caching one new
// 16-token block (chained to a parent) and 8 evictions.
func benchStep() []Event {
	var events []Event
	tokens := make([]uint32, 16)
	for i := range tokens {
		tokens[i] = uint32(100000 + i*997)
	}
	for i := range 8 {
		parent := uint64(0x9e3779b97f4a7c15) * uint64(i+1)
		events = append(events, Event{Type: BlockStored, BlockHashes: []uint64{parent ^ 0xabcdef}, ParentBlockHash: &parent,
			TokenIDs: tokens, BlockSize: 16})
	}
	for i := range 8 {
		events = append(events, Event{Type: BlockRemoved, BlockHashes: []uint64{uint64(0xd20799bf0f09a40d) + uint64(i)}})
	}
	return events
}

func BenchmarkAppendBatch(b *testing.B) {
	events := benchStep()
	for _, f := range []Format{FormatMap, FormatArray, FormatArrayV010} {
		b.Run(string(f), func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendBatch(buf[:0], f, refTS, events, 0)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
		})
	}
}

// BenchmarkEngineStep measures the engine-side cost of one step's sink calls
// (what the step loop pays), with the queue drained by a bare goroutine.
func BenchmarkEngineStep(b *testing.B) {
	p, err := New(enabledConfig("inproc://kvevents-bench-step"), 0, FormatMap, nil, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-p.queue:
			case <-done:
				return
			}
		}
	}()
	defer close(done)
	events := benchStep()
	b.ReportAllocs()
	for b.Loop() {
		for i := range events {
			e := &events[i]
			if e.Type == BlockStored {
				p.BlockStored(e.BlockHashes, e.ParentBlockHash, e.TokenIDs, e.BlockSize, "")
			} else {
				p.BlockRemoved(e.BlockHashes[0])
			}
		}
		p.EndStep(refTS)
	}
}

// BenchmarkPublishEndToEnd measures batches per second from EndStep to a SUB
// on 127.0.0.1 receiving them: queue, encode, ZMQ send and receive.
func BenchmarkPublishEndToEnd(b *testing.B) {
	for _, f := range []Format{FormatMap, FormatArray} {
		b.Run(string(f), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sub := zmq4.NewSub(ctx)
			defer sub.Close()
			if err := sub.Listen("tcp://127.0.0.1:0"); err != nil {
				b.Fatal(err)
			}
			if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
				b.Fatal(err)
			}
			cfg := enabledConfig("tcp://" + sub.Addr().String())
			cfg.HWM = 0                // no silent drops on the PUB side
			cfg.MaxQueueSize = 1 << 20 // no drops in the queue
			p, err := New(cfg, 0, f, nil, prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			runErr := make(chan error, 1)
			go func() { runErr <- p.Run(ctx) }()
			<-p.Ready()
			// Wait for the subscription (ZMQ's slow joiner would drop batches).
			for {
				p.ringMu.Lock()
				topics := p.socks.pub.(zmq4.Topics).Topics()
				p.ringMu.Unlock()
				if len(topics) > 0 {
					break
				}
				runtime.Gosched()
			}
			events := benchStep()
			received := make(chan int, 1)
			go func() {
				n := 0
				for n < b.N {
					if _, err := sub.Recv(); err != nil {
						break
					}
					n++
				}
				received <- n
			}()
			b.ResetTimer()
			for range b.N {
				for i := range events {
					e := &events[i]
					if e.Type == BlockStored {
						p.BlockStored(e.BlockHashes, e.ParentBlockHash, e.TokenIDs, e.BlockSize, "")
					} else {
						p.BlockRemoved(e.BlockHashes[0])
					}
				}
				p.EndStep(refTS)
			}
			if n := <-received; n != b.N {
				b.Fatalf("received %d batches, want %d", n, b.N)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
			b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "events/s")
			cancel()
			if err := <-runErr; err != nil {
				b.Fatal(err)
			}
		})
	}
}
