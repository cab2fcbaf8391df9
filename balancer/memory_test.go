package balancer

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/load"
)

// TestMemoryWaitCountsAnswersNearTheirEnds checks, through the client and
// admin HTTP surface, that the wait for KV memory counts how far the
// balancer's own streams are from their max_tokens (docs/routing.md,
// "Answers near their ends free memory first"). Streams of max_tokens 100
// are held on both replicas: on the one holding more of them each has
// written one token, on the other 99. Then both report their memory 99%
// full. A new request is short of memory on both; the replica whose answers
// each have a token left frees its memory first and is picked, though it
// has fewer requests in flight to free it (by the mean reserve alone, the
// other's more requests ending at the same rate freed it sooner).
func TestMemoryWaitCountsAnswersNearTheirEnds(t *testing.T) {
	var usage atomic.Uint64 // the KV usage both report, as float64 bits
	usage.Store(math.Float64bits(0.05))
	var mu sync.Mutex
	written := map[string]int{} // tokens each replica's held streams write
	start, release := make(chan struct{}), make(chan struct{})
	streaming := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			u := math.Float64frombits(usage.Load())
			w.Header().Set(load.Header, load.EncodeHeader(load.Report{KVUsage: u}, load.Share{}))
			token := startStream(w)
			if !strings.Contains(string(body), `"max_tokens":1,`) {
				// A first byte that bears no token: the answer's headers
				// reach the client, its prefill goes on.
				_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`+"\n\n")
				w.(http.Flusher).Flush()
				<-start
				mu.Lock()
				n := written[name]
				mu.Unlock()
				for range n {
					token()
				}
				<-release
			}
			token()
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
		}
	}
	ups := []*httptest.Server{httptest.NewServer(streaming("r0")), httptest.NewServer(streaming("r1"))}
	for _, u := range ups {
		t.Cleanup(u.Close)
	}
	t.Cleanup(func() { // before the upstreams close
		for _, ch := range []chan struct{}{start, release} {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	})
	cfg := testConfig(ups[0].URL, ups[1].URL)
	for i := range cfg.Replicas {
		cfg.Replicas[i].KVCapacityBlocks = 1000 // 16,000 tokens
	}
	cfg.Gossip.Timings.LoadMaxAge = time.Hour // the reports stay fresh however slow the machine
	b, srv := newTestBalancer(t, cfg)
	admin := newAdminServer(t, b)

	// Held streams, while both replicas report room, until each replica
	// holds one and there are six.
	type held struct {
		replica string
		rd      *bufio.Reader
	}
	var streams []held
	count := map[string]int{}
	for i := 0; count["r0"] == 0 || count["r1"] == 0 || len(streams) < 6; i++ {
		if i == 20 {
			t.Fatalf("twenty streams went %v, want some on each replica", count)
		}
		body := fmt.Sprintf(`{"model":"m","stream":true,"max_tokens":100,"prompt":%q}`, strings.Repeat(fmt.Sprintf("s%d ", i), 40))
		resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		rep := resp.Header.Get(HeaderReplica)
		streams = append(streams, held{rep, bufio.NewReader(resp.Body)})
		count[rep]++
	}
	more, fewer := "r0", "r1"
	if count["r1"] > count["r0"] {
		more, fewer = fewer, more
	}
	mu.Lock()
	written[more], written[fewer] = 1, 99
	mu.Unlock()
	close(start)
	for i, s := range streams {
		for events := 0; events < written[s.replica]; {
			line, err := s.rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream %d on %s after %d events: %v", i, s.replica, events, err)
			}
			if strings.Contains(line, `"content":"x"`) {
				events++
			}
		}
	}

	// Both memories fill up; a one-token answer from each brings the news.
	usage.Store(math.Float64bits(0.99))
	fresh := map[string]bool{}
	for i := 0; !fresh["r0"] || !fresh["r1"]; i++ {
		if i == 20 {
			t.Fatalf("twenty one-token answers came from %v only", fresh)
		}
		resp, _ := post(t, srv.URL+"/v1/completions", fmt.Sprintf(`{"model":"m","stream":true,"max_tokens":1,"prompt":"q%d quick"}`, i))
		fresh[resp.Header.Get(HeaderReplica)] = true
	}

	ex := explainOf(t, admin.URL, `{"model":"m","stream":true,"max_tokens":100,"prompt":"one more story"}`)
	wait := map[string]float64{}
	for _, c := range ex.Candidates {
		if c.MemoryWaitMS == nil {
			t.Fatalf("%s: no memory wait (streams %v): want both short of memory", c.ID, count)
		}
		wait[c.ID] = *c.MemoryWaitMS
	}
	if ex.Pick != fewer || wait[fewer] <= 0 || wait[fewer] >= wait[more] {
		t.Errorf("pick %s (%s), memory waits %v ms, streams %v: want %s, whose answers are a token from their ends, with the shorter wait",
			ex.Pick, ex.Reason, wait, count, fewer)
	}
}
