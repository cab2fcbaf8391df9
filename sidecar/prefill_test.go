package sidecar

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/load"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// A stream stays prefilling after its headers and its role-only first chunk,
// until its first token-bearing event; its origin's share and the load
// report in its headers and trailer say the same.
func TestProxyStreamPrefillEndsAtFirstToken(t *testing.T) {
	for _, proto := range []string{"http1", "h2c"} {
		t.Run(proto, func(t *testing.T) {
			step := make(chan struct{})
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, `data: {"choices":[{"delta":{"role":"assistant","content":""}}]}`+"\n\n")
				w.(http.Flusher).Flush()
				<-step
				_, _ = io.WriteString(w, `data: {"choices":[{"delta":{"content":"Hi"}}]}`+"\n\n")
				w.(http.Flusher).Flush()
				<-step
				_, _ = io.WriteString(w, "data: [DONE]\n\n")
			})
			p, srv, _ := testProxy(t, upstream, simTok, nil)
			p.engineStatus = func() LoadStatus {
				return LoadStatus{Engine: engine.Load{Running: 5, Waiting: 2, KVUsage: 0.25}, Readable: true}
			}
			client := srv.Client()
			if proto == "h2c" {
				client = h2cClient()
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/completions",
				strings.NewReader(`{"model":"m","prompt":"0123456789abcdefghij","stream":true}`))
			req.Header.Set(load.Origin, "balancer-a")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.Header.Get(load.Origin) != "" {
				t.Errorf("the origin header came back")
			}
			head, headOwn, err := load.ParseHeader(resp.Header.Get(load.Header))
			if err != nil {
				t.Fatalf("report in the headers: %v", err)
			}
			tokens := int64(len(simtok.Encode("0123456789abcdefghij", true)))
			want := load.Report{Running: 5, Waiting: 2, KVUsage: 0.25, InFlight: 1, Pending: 1, PrefillTokens: tokens}
			if diff := cmp.Diff(want, head); diff != "" {
				t.Errorf("report at the headers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(load.Share{InFlight: 1, Pending: 1, PrefillTokens: tokens}, headOwn); diff != "" {
				t.Errorf("share at the headers (-want +got):\n%s", diff)
			}
			br := bufio.NewReader(resp.Body)
			readEvent(t, br)
			c := p.counts.Counts()
			if c.Prefilling != 1 || c.WaitingPrefillTokens != tokens || len(c.Origins) != 1 || c.Origins[0].Prefilling != 1 {
				t.Errorf("after the role chunk: %+v, want still prefilling", c)
			}
			step <- struct{}{}
			readEvent(t, br)
			if err := waitUntil(func() bool { return p.counts.Counts().Prefilling == 0 }); err != nil {
				t.Fatalf("after the first token: %+v", p.counts.Counts())
			}
			c = p.counts.Counts()
			if c.InFlight != 1 || c.WaitingPrefillTokens != 0 || c.Origins[0].PrefillTokens != 0 || c.Origins[0].InFlight != 1 {
				t.Errorf("after the first token: %+v", c)
			}
			step <- struct{}{}
			if _, err := io.Copy(io.Discard, br); err != nil {
				t.Fatal(err)
			}
			tail, tailOwn, err := load.ParseHeader(resp.Trailer.Get(load.Header))
			if err != nil {
				t.Fatalf("report in the trailer: %v (trailer %v)", err, resp.Trailer)
			}
			if tail.Pending != 0 || tailOwn.PrefillTokens != 0 || tailOwn.InFlight != 1 {
				t.Errorf("report at the end = %+v %+v, want the request in flight, past its prefill", tail, tailOwn)
			}
			if err := waitUntil(func() bool { return cmp.Equal(p.counts.Counts(), DataPathCounts{}) }); err != nil {
				t.Errorf("after the end: %+v", p.counts.Counts())
			}
		})
	}
}

func readEvent(t *testing.T, br *bufio.Reader) {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read event: %v", err)
		}
		if line == "\n" {
			return
		}
	}
}

// A non-streaming request counts as prefilling until the engine reports it
// running (the oldest requests in flight are the running ones), not for its
// whole decode; a stream ahead of it is left to its first token.
func TestLedgerMarkRunning(t *testing.T) {
	var l ledger
	stream := l.admit("a", true)
	l.addTokens(stream, 100, 100)
	plain := l.admit("a", false)
	l.addTokens(plain, 50, 40)
	later := l.admit("b", false)
	l.addTokens(later, 30, 30)
	l.markRunning(2)
	c := l.Counts()
	if c.Prefilling != 2 || c.WaitingPrefillTokens != 130 {
		t.Fatalf("after 2 running: %+v, want the stream and the newest request prefilling (130 tokens)", c)
	}
	want := []OriginCounts{{Origin: "a", InFlight: 2, Prefilling: 1, PrefillTokens: 100}, {Origin: "b", InFlight: 1, Prefilling: 1, PrefillTokens: 30}}
	if diff := cmp.Diff(want, c.Origins); diff != "" {
		t.Errorf("origins (-want +got):\n%s", diff)
	}
	l.finish(plain)
	l.markRunning(2) // now the stream and later
	if c := l.Counts(); c.Prefilling != 1 || c.WaitingPrefillTokens != 100 || c.InFlight != 2 {
		t.Errorf("after the second report: %+v", c)
	}
	l.finish(stream)
	l.finish(later)
	l.finish(later)
	if c := l.Counts(); !cmp.Equal(c, DataPathCounts{}) {
		t.Errorf("after the end: %+v", c)
	}
}

// The ledger's KV sum moves with what the engine's scraped usage lacks: a
// stream's first token adds its uncached prompt tokens unless a scrape
// already counted it running, the end of a request in memory takes them
// out, and a request that never held memory between scrapes (a
// non-streaming response, a stream ended before its first token) leaves it
// alone.
func TestLedgerKVTokens(t *testing.T) {
	var l ledger
	step := func(name string, want int64) {
		t.Helper()
		if got := l.kvTokens(); got != want {
			t.Errorf("%s: kvTokens %d, want %d", name, got, want)
		}
	}
	a := l.admit("a", true)
	l.addTokens(a, 100, 80) // 20 tokens cached
	step("a admitted", 0)
	l.firstToken(a)
	step("a's first token", 80)
	l.firstToken(a)
	step("a's first token again", 80)

	running := l.admit("a", true)
	l.addTokens(running, 64, 64)
	l.markRunning(2) // a and running are in the scrape's usage now
	l.firstToken(running)
	step("a stream the engine reported running", 80)

	plain := l.admit("b", false)
	l.addTokens(plain, 50, 50)
	l.prefilled(plain) // its whole response arrived
	l.finish(plain)
	step("a non-streaming request between scrapes", 80)

	cut := l.admit("b", true)
	l.addTokens(cut, 30, 30)
	l.finish(cut)
	step("a stream ended before its first token", 80)

	l.finish(a)
	step("a ended", 0)
	l.finish(running)
	step("the running stream ended", -64)
	l.finish(running)
	step("an end again", -64)
}

// The report a response carries and the gossiped one follow one rule: while
// the engine's page is unreadable both take the data path's counts for the
// engine's and keep the last known KV usage (never zeros).
func TestHeaderReportMatchesTheGossipedOne(t *testing.T) {
	for _, readable := range []bool{true, false} {
		p := &proxy{}
		last := engine.Load{Running: 7, Waiting: 3, KVUsage: 0.4}
		p.engineStatus = func() LoadStatus { return LoadStatus{Engine: last, Readable: readable} }
		a := p.counts.admit("a", true)
		p.counts.addTokens(a, 100, 100)
		b := p.counts.admit("b", false)
		p.counts.addTokens(b, 50, 50)
		p.counts.prefilled(b)
		head, share, err := load.ParseHeader(p.headerReport("a"))
		if err != nil {
			t.Fatal(err)
		}
		gossiped := LoadStatus{Readable: readable, Engine: last, DataPath: p.counts.Counts()}.Report()
		gossiped.Origins = nil
		if diff := cmp.Diff(gossiped, head); diff != "" {
			t.Errorf("readable=%v: header report differs from the gossiped one (-gossip +header):\n%s", readable, diff)
		}
		want := load.Report{Running: 7, Waiting: 3, KVUsage: 0.4, InFlight: 2, Pending: 1, PrefillTokens: 100}
		if !readable {
			want.Running, want.Waiting = 1, 1
		}
		if diff := cmp.Diff(want, head); diff != "" {
			t.Errorf("readable=%v: header report (-want +got):\n%s", readable, diff)
		}
		if diff := cmp.Diff(load.Share{InFlight: 1, Pending: 1, PrefillTokens: 100}, share); diff != "" {
			t.Errorf("readable=%v: share (-want +got):\n%s", readable, diff)
		}
	}
}
