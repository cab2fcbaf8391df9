package enginesim

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestRunPublishesKVEvents: with --kv-events-config, Run wires one
// publisher per rank to its engine (batches with seq 0, 1, …) and the
// restart fault starts the sequence numbers again at 0.
func TestRunPublishesKVEvents(t *testing.T) {
	port := freePort(t)
	cfg := simLoopbackConfig()
	cfg.KVEventsConfig = fmt.Sprintf(`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:%d","topic":"kv"}`, port)
	base, _ := runSim(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.Dial(fmt.Sprintf("tcp://127.0.0.1:%d", port)); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, "kv"); err != nil {
		t.Fatal(err)
	}
	msgs := make(chan zmq4.Msg, 1024)
	go func() {
		for {
			m, err := sub.Recv()
			if err != nil {
				close(msgs)
				return
			}
			msgs <- m
		}
	}()
	c := &http.Client{}
	// SUB joins asynchronously: send distinct prompts until batches arrive.
	seqOf := func() uint64 {
		t.Helper()
		for i := 0; ; i++ {
			post(t, c, base+"/v1/completions", fmt.Sprintf(`{"prompt":"kv events prompt number %d with enough tokens to fill blocks","max_tokens":1}`, i))
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatal("subscriber closed")
				}
				if len(m.Frames) != 3 || string(m.Frames[0]) != "kv" || len(m.Frames[1]) != 8 {
					t.Fatalf("frames: %q", m.Frames)
				}
				return binary.BigEndian.Uint64(m.Frames[1])
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("no KV events")
			}
		}
	}
	first := seqOf()
	for len(msgs) > 0 {
		<-msgs
	}
	if resp, _ := post(t, c, base+"/inferrail/debug/restart", ""); resp.StatusCode != 200 {
		t.Fatalf("restart: %d", resp.StatusCode)
	}
	for len(msgs) > 0 {
		<-msgs
	}
	if after := seqOf(); after != 0 {
		t.Errorf("first batch after restart has seq %d (before: %d), want 0", after, first)
	}
}
