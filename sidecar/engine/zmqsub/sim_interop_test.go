package zmqsub_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/enginesim/kvevents"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/blockset"
	"github.com/inferrail/inferrail/sidecar/engine/vllm"
	"github.com/inferrail/inferrail/sidecar/engine/zmqsub"
)

func addrPort(t *testing.T, addr string) int {
	t.Helper()
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return p
}

// The simulator's publisher and this subscriber interoperate: a subscriber
// that joins late recovers the history through replay, and the block set ends
// up with exactly the blocks the simulated engine stored, for every payload
// format the simulator imitates.
func TestSimulatorPublisherInterop(t *testing.T) {
	for _, format := range []kvevents.Format{kvevents.FormatMap, kvevents.FormatArray, kvevents.FormatArrayV010} {
		t.Run(string(format), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := kvevents.DefaultConfig()
			cfg.EnableKVCacheEvents, cfg.Publisher = true, kvevents.PublisherZMQ
			cfg.Endpoint, cfg.ReplayEndpoint, cfg.Topic = "tcp://*:0", "tcp://*:0", "kv@sim@m"
			pub, err := kvevents.New(cfg, 0, format, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			pubDone := make(chan error, 1)
			go func() { pubDone <- pub.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-pubDone; err != nil {
					t.Errorf("publisher Run: %v", err)
				}
			}()
			select {
			case <-pub.Ready():
			case err := <-pubDone:
				t.Fatalf("publisher Run: %v", err)
			}

			// The engine stores a growing chain of 4-token blocks, one per step.
			const bs = 4
			var tokens []uint32
			var parent *uint64
			step := func() {
				blk := []uint32{uint32(len(tokens)), 1, 2, 3}
				tokens = append(tokens, blk...)
				h := uint64(len(tokens)) * 7919
				pub.BlockStored([]uint64{h}, parent, blk, bs, "")
				pub.EndStep(time.Now())
				parent = &h
			}
			for range 5 { // before anyone listens: only the replay ring has them
				step()
			}

			s, err := zmqsub.New(zmqsub.Config{Host: "127.0.0.1", BasePort: addrPort(t, pub.Addr()),
				ReplayBasePort: addrPort(t, pub.ReplayAddr()), Topic: "kv@"}, vllm.DecodeBatch, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			subDone := make(chan error, 1)
			go func() { subDone <- s.Run(ctx) }()
			defer func() { cancel(); <-subDone }()
			set, _ := blockset.New(blockset.Config{Model: "m", BlockSize: bs}, nil, nil)

			// Keep the engine stepping until the subscriber has every batch.
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(20 * time.Second)
			var want uint64
			for steps := 5; want < uint64(steps) || want < 8; {
				select {
				case u := <-s.Updates():
					if u.Kind != zmqsub.UpdateBatch || u.Batch.Seq != want {
						t.Fatalf("update %v seq %d, want batch %d", u.Kind, u.Batch.Seq, want)
					}
					set.Apply(u.Batch)
					want++
				case <-tick.C:
					if steps < 200 {
						step()
						steps++
					}
				case <-deadline:
					t.Fatalf("timed out at batch %d", want)
				}
			}
			cancel()
			expect := kvblock.Hashes(nil, kvblock.NewSeed("m", "", ""), tokens[:int(want)*bs], bs)
			if set.Len() != len(expect) || set.Incomplete() {
				t.Fatalf("block set Len %d Incomplete %v, want %d complete", set.Len(), set.Incomplete(), len(expect))
			}
			for _, h := range expect {
				if !set.Contains(h) {
					t.Fatalf("missing block %x", h)
				}
			}
		})
	}
}
