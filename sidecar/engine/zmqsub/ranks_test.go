package zmqsub_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/sidecar/engine/vllm"
	"github.com/inferrail/inferrail/sidecar/engine/zmqsub"
)

// consecutivePubs binds n PUB sockets on consecutive ports (rank r on base+r).
func consecutivePubs(t *testing.T, ctx context.Context, n int) []zmq4.Socket {
	t.Helper()
	for range 50 {
		first := zmq4.NewPub(ctx)
		if err := first.Listen("tcp://127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		pubs := []zmq4.Socket{first}
		for r := 1; r < n; r++ {
			p := zmq4.NewPub(ctx)
			if err := p.Listen(fmt.Sprintf("tcp://127.0.0.1:%d", port(first)+r)); err != nil {
				p.Close()
				break
			}
			pubs = append(pubs, p)
		}
		if len(pubs) == n {
			t.Cleanup(func() {
				for _, p := range pubs {
					p.Close()
				}
			})
			return pubs
		}
		for _, p := range pubs {
			p.Close()
		}
	}
	t.Fatal("no consecutive free ports")
	return nil
}

// Each data-parallel rank has its own socket and sequence numbers.
func TestRanksAreIndependent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pubs := consecutivePubs(t, ctx, 2)
	s, err := zmqsub.New(zmqsub.Config{Host: "127.0.0.1", BasePort: port(pubs[0]), Ranks: 2, Topic: "kv@"},
		vllm.DecodeBatch, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for _, p := range pubs {
		pp := &peer{t: t, pub: p, ring: map[uint64][]byte{}}
		pp.waitSubscribed()
	}
	send := func(rank int, seq uint64) {
		if err := pubs[rank].SendMulti(zmq4.NewMsgFrom([]byte(topic), be(seq), stored(seq))); err != nil {
			t.Fatal(err)
		}
	}
	send(0, 0)
	send(1, 0)
	send(1, 1)
	send(0, 1)
	perRank := map[int][]uint64{}
	deadline := time.After(20 * time.Second)
	for n := 0; n < 4; n++ {
		select {
		case u := <-s.Updates():
			if u.Kind != zmqsub.UpdateBatch || u.Batch.Rank != u.Rank {
				t.Fatalf("update %+v", u)
			}
			perRank[u.Rank] = append(perRank[u.Rank], u.Batch.Seq)
		case <-deadline:
			t.Fatalf("timed out: %v", perRank)
		}
	}
	if diff := cmp.Diff(map[int][]uint64{0: {0, 1}, 1: {0, 1}}, perRank); diff != "" {
		t.Errorf("batches per rank (-want +got):\n%s", diff)
	}
}
