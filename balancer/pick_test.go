package balancer

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Requests that arrive at one instant are routed as if one after the other:
// each sees the leases of those picked before it. Eight long prompts sent
// together to eight idle replicas, each held before its first byte, land
// one per replica; when two picks ran concurrently over one snapshot of the
// counts, both could see the same replica idle and queue there. (Without
// the rotation of prompts no replica holds, spread_margin 0: these static
// replicas have no summaries, so each prompt's prefix_hash owner is assumed
// to hold its first blocks, and a rotation mixed with such picks may take a
// replica with a prefill pending, which its margin allows.)
func TestConcurrentPicksSeeEachOthersLeases(t *testing.T) {
	const n = 8
	for round := range 3 {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			release := make(chan struct{})
			var held [n]atomic.Int32
			var urls []string
			for i := range n {
				u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
					held[i].Add(1)
					<-release
					okHandler(w, r)
				})
				urls = append(urls, u.srv.URL)
			}
			cfg := testConfig(urls...)
			// Every prompt is tokenized, however loaded the machine: a
			// request routed without its tokens leases no prefill work.
			cfg.Tokenize.MaxWait = time.Minute
			cfg.Models[0].Routing.SpreadMargin = 0
			_, srv := newTestBalancer(t, cfg)
			words := strings.TrimSpace(strings.Repeat("a long prompt whose prefill takes a while on any engine ", 400))
			start := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			var seen []string
			defer func() {
				close(release)
				wg.Wait()
				if t.Failed() {
					t.Log(seen)
				}
			}()
			for i := range n {
				wg.Go(func() {
					<-start
					body := fmt.Sprintf(`{"model":"m","prompt":"request %d round %d: %s","max_tokens":1}`, i, round, words)
					resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen = append(seen, fmt.Sprintf("%d→%s(prompt %q, cached %q)", i, resp.Header.Get(HeaderReplica), resp.Header.Get(HeaderPromptTokens), resp.Header.Get(HeaderCachedTokens)))
					mu.Unlock()
					resp.Body.Close()
				})
			}
			close(start)
			counts := func() (total int, per []int32) {
				for i := range held {
					v := held[i].Load()
					per = append(per, v)
					total += int(v)
				}
				return total, per
			}
			deadline := time.Now().Add(30 * time.Second)
			for total, _ := counts(); total < n; total, _ = counts() {
				if time.Now().After(deadline) {
					t.Fatalf("only %d of %d requests reached a replica", total, n)
				}
				time.Sleep(time.Millisecond)
			}
			if _, per := counts(); !allOne(per) {
				t.Errorf("requests per replica %v, want one each", per)
			}
		})
	}
}

func allOne(v []int32) bool {
	for _, x := range v {
		if x != 1 {
			return false
		}
	}
	return true
}
