package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/h2c"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/logtest"
	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/ratelog"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// guard bounds a wait that only ends early on success; it is a hang guard,
// not a timing assertion.
const guard = 20 * time.Second

type recordObserver struct {
	mu     sync.Mutex
	got    [][][]kvblock.Hash
	signal chan struct{}
}

func (r *recordObserver) observePrompt(h [][]kvblock.Hash) {
	r.mu.Lock()
	r.got = append(r.got, h)
	r.mu.Unlock()
	if r.signal != nil {
		r.signal <- struct{}{}
	}
}

// testProxy starts the data path in front of upstream and returns its URL.
func testProxy(t *testing.T, upstream http.Handler, tok Tokenizer, obs promptObserver, opts ...func(*proxy)) (*proxy, *httptest.Server, *metrics) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	return testProxyTo(t, up.URL, tok, obs, opts...)
}

// testProxyTo starts the data path in front of target; opts adjust the proxy
// before it serves.
func testProxyTo(t *testing.T, target string, tok Tokenizer, obs promptObserver, opts ...func(*proxy)) (*proxy, *httptest.Server, *metrics) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics(prometheus.NewRegistry(), nil)
	cfg := DefaultConfig().Proxy
	insp := &promptInspector{tok: tok, model: func() string { return "m" }, blockSize: func() int { return 4 }}
	tr := newEngineTransport(cfg)
	t.Cleanup(tr.CloseIdleConnections)
	p := newProxy(u, cfg, tr, insp, obs, slog.New(slog.DiscardHandler), m)
	for _, o := range opts {
		o(p)
	}
	srv := httptest.NewUnstartedServer(p)
	srv.Config.Protocols = h2c.ServerProtocols()
	srv.Start()
	t.Cleanup(srv.Close)
	return p, srv, m
}

// TestProxyStreamsEachChunkAtOnce makes the upstream write a stream in random
// pieces and wait, before writing the next piece, until the client has read
// the previous one: a proxy that buffered anything would deadlock.
func TestProxyStreamsEachChunkAtOnce(t *testing.T) {
	for _, proto := range []string{"http1", "h2c"} {
		t.Run(proto, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(proto))))
			var pieces []string
			for range 40 {
				n := 1 + rng.IntN(300)
				pieces = append(pieces, strings.Repeat(string(rune('a'+rng.IntN(26))), n))
			}
			ack := make(chan struct{})
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("X-Engine", "sim")
				w.WriteHeader(http.StatusOK)
				for _, p := range pieces {
					_, _ = io.WriteString(w, p)
					w.(http.Flusher).Flush()
					select {
					case <-ack:
					case <-r.Context().Done():
						return
					}
				}
			})
			_, srv, _ := testProxy(t, upstream, nil, nil)
			client := srv.Client()
			if proto == "h2c" {
				client = h2cClient()
			}
			resp, err := client.Get(srv.URL + "/v1/stream")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if proto == "h2c" && resp.ProtoMajor != 2 {
				t.Fatalf("protocol %s, want HTTP/2", resp.Proto)
			}
			if got := resp.Header.Get("X-Engine"); got != "sim" {
				t.Errorf("header X-Engine = %q, want sim", got)
			}
			for i, p := range pieces {
				buf := make([]byte, len(p))
				if _, err := io.ReadFull(resp.Body, buf); err != nil {
					t.Fatalf("piece %d: %v", i, err)
				}
				if string(buf) != p {
					t.Fatalf("piece %d = %q, want %q", i, buf, p)
				}
				ack <- struct{}{}
			}
			if rest, _ := io.ReadAll(resp.Body); len(rest) != 0 {
				t.Errorf("trailing bytes %q", rest)
			}
		})
	}
}

// TestProxyClientGoneCancelsUpstream: a client that disconnects mid-stream
// cancels the engine's request.
func TestProxyClientGoneCancelsUpstream(t *testing.T) {
	for _, proto := range []string{"http1", "h2c"} {
		t.Run(proto, func(t *testing.T) {
			started := make(chan struct{})
			cancelled := make(chan struct{})
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, "data: first\n\n")
				w.(http.Flusher).Flush()
				close(started)
				<-r.Context().Done()
				close(cancelled)
			})
			p, srv, _ := testProxy(t, upstream, nil, nil)
			client := srv.Client()
			if proto == "h2c" {
				client = h2cClient()
			}
			ctx, cancel := context.WithCancel(t.Context())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/completions", strings.NewReader(`{"prompt":"hi","stream":true}`))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || line != "data: first\n" {
				t.Fatalf("first line %q, %v", line, err)
			}
			waitFor(t, started, "upstream start")
			if c := p.counts.Counts(); c.InFlight != 1 || c.Prefilling != 0 {
				t.Errorf("counts while streaming = %+v, want 1 in flight, 0 waiting", c)
			}
			cancel()
			resp.Body.Close()
			waitFor(t, cancelled, "upstream cancellation")
			if err := waitUntil(func() bool { return cmp.Equal(p.counts.Counts(), DataPathCounts{}) }); err != nil {
				t.Errorf("counts after the client left = %+v, want zero", p.counts.Counts())
			}
		})
	}
}

// TestProxyCounts checks the exact counts at each stage of a request.
func TestProxyCounts(t *testing.T) {
	release := make(chan struct{})
	inHandler := make(chan struct{})
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inHandler <- struct{}{}
		<-release // before headers: the request waits for its first byte
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		inHandler <- struct{}{}
		<-release // after headers: in flight, not waiting
		_, _ = io.WriteString(w, "done")
	})
	obs := &recordObserver{}
	// The replica holds the prompt's first block (4 of its 8 tokens): only
	// the rest waits as prefill work.
	var seenHashes [][]kvblock.Hash
	p, srv, _ := testProxy(t, upstream, simTok, obs, func(p *proxy) {
		p.cachedTokens = func(hs [][]kvblock.Hash) int { seenHashes = hs; return 4 }
	})
	body := `{"model":"m","prompt":"0123456789abcdefghij"}` // 20 one-byte chunks... see below
	want := len(simtok.Encode("0123456789abcdefghij", true))

	errc := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		errc <- err
	}()
	waitFor(t, inHandler, "request at the engine")
	// The prompt is counted beside the forwarding (TestProxyForwardsBeforeTokenizing).
	before := DataPathCounts{InFlight: 1, Prefilling: 1, PromptTokens: int64(want), WaitingPromptTokens: int64(want), WaitingPrefillTokens: int64(want - 4)}
	if err := waitUntil(func() bool { return cmp.Equal(before, p.counts.Counts()) }); err != nil {
		t.Errorf("before first byte (-want +got):\n%s", cmp.Diff(before, p.counts.Counts()))
	}
	release <- struct{}{}
	waitFor(t, inHandler, "headers sent")
	// The headers reach the proxy's transport before ModifyResponse; the
	// observer runs there, so wait for it through the counts' owner below.
	if err := waitUntil(func() bool { return p.counts.Counts().Prefilling == 0 }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DataPathCounts{InFlight: 1, PromptTokens: int64(want)}, p.counts.Counts()); diff != "" {
		t.Errorf("after first byte (-want +got):\n%s", diff)
	}
	release <- struct{}{}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := waitUntil(func() bool { return cmp.Equal(p.counts.Counts(), DataPathCounts{}) }); err != nil {
		t.Errorf("after the end: %v", err)
	}
	if n := p.prompts.Load(); n != 1 {
		t.Errorf("accepted prompts = %d, want 1", n)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	ids := simtok.Encode("0123456789abcdefghij", true)
	wantHashes := [][][]kvblock.Hash{{kvblock.Hashes(nil, kvblock.NewSeed("m", "", ""), ids, 4)}}
	if diff := cmp.Diff(wantHashes, obs.got); diff != "" {
		t.Errorf("observed prompts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantHashes[0], seenHashes); diff != "" {
		t.Errorf("hashes asked of the block set (-want +got):\n%s", diff)
	}
}

// TestProxyForwardsBodyAndHeaders checks that the body is forwarded byte for
// byte, hop-by-hop headers are dropped and end-to-end ones kept.
func TestProxyForwardsBodyAndHeaders(t *testing.T) {
	type seen struct {
		body, path, query, auth, conn, custom, te string
	}
	got := make(chan seen, 1)
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{string(b), r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Connection"), r.Header.Get("X-Custom"), r.Header.Get("Te")}
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Request-Id", "abc")
		w.WriteHeader(http.StatusCreated)
	})
	_, srv, _ := testProxy(t, upstream, simTok, nil)
	body := `{"model":"m", "messages":[{"role":"user","content":"hello"}], "extra": {"kept": [1,2,3]}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions?x=1", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Connection", "X-Custom-Hop")
	req.Header.Set("X-Custom-Hop", "drop me")
	req.Header.Set("X-Custom", "keep")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := seen{body: body, path: "/v1/chat/completions", query: "x=1", auth: "Bearer k", custom: "keep"}
	if diff := cmp.Diff(want, <-got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("upstream saw (-want +got):\n%s", diff)
	}
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Request-Id") != "abc" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("response: status %d, X-Request-Id %q, Keep-Alive %q", resp.StatusCode, resp.Header.Get("X-Request-Id"), resp.Header.Get("Keep-Alive"))
	}
}

func TestProxyEngineUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p, srv, m := testProxyTo(t, "http://"+addr, nil, nil)
	resp, err := srv.Client().Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body openai.ErrorResponse
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadGateway || body.Error.Code != 502 || body.Error.Type != "Bad Gateway" || body.Error.Message == "" {
		t.Errorf("got %d %+v, want an OpenAI-shaped 502", resp.StatusCode, body)
	}
	if got := metricValue(t, m.proxyRequests.WithLabelValues("upstream_error")); got != 1 {
		t.Errorf("upstream_error count = %v, want 1", got)
	}
	if c := p.counts.Counts(); !cmp.Equal(c, DataPathCounts{}) {
		t.Errorf("counts after failure = %+v, want zero", c)
	}
}

// TestProxyBodyReadErrorIsOpenAIShaped cuts a request body short: the client
// gets vLLM's error body with 400, byte for byte, and the engine nothing.
func TestProxyBodyReadErrorIsOpenAIShaped(t *testing.T) {
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the engine got %s %s", r.Method, r.URL.Path)
	}))
	defer engine.Close()
	_, srv, m := testProxyTo(t, engine.URL, nil, nil)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\""
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := `{"error":{"message":"read request body: unexpected EOF","type":"BadRequestError","param":null,"code":400}}`
	if resp.StatusCode != http.StatusBadRequest || string(body) != want || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got %d %q %s, want 400 application/json %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
	}
	if got := metricValue(t, m.proxyRequests.WithLabelValues("client_error")); got != 1 {
		t.Errorf("client_error count = %v, want 1", got)
	}
}

func TestProxyLargeBodyStreamsUninspected(t *testing.T) {
	got := make(chan int, 1)
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- len(b)
	})
	p, srv, m := testProxy(t, upstream, simTok, nil)
	p.cfg.MaxInspectBytes = 64
	body := `{"prompt":"` + strings.Repeat("z", 500) + `"}`
	// Chunked (unknown length) so the size is discovered while reading.
	resp, err := srv.Client().Post(srv.URL+"/v1/completions", "application/json", io.MultiReader(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := <-got; n != len(body) {
		t.Errorf("upstream got %d bytes, want %d", n, len(body))
	}
	if v := metricValue(t, m.promptsUntokenized.WithLabelValues("too_large")); v != 1 {
		t.Errorf("too_large = %v, want 1", v)
	}
}

func h2cClient() *http.Client {
	return &http.Client{Transport: &http.Transport{Protocols: h2c.ClientProtocols()}}
}

func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(guard):
		t.Fatalf("gave up waiting for %s", what)
	}
}

// waitUntil polls cond, for state that another goroutine reaches after the
// event the test synchronised on (a deferred counter decrement, a loop's
// next tick). The deadline is a hang guard only, never an assertion.
func waitUntil(cond func() bool) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(guard)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			return errors.New("condition not reached")
		}
	}
	return nil
}

// metricValue reads a counter's or gauge's value.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	switch {
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	}
	t.Fatalf("metric %v is neither a counter nor a gauge", m.Desc())
	return 0
}

// An engine that cannot be reached fails every request with a 502, but the
// warning is logged once a minute, not once per request.
func TestEngineFailureWarningIsRateLimited(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	var buf logtest.Buffer
	_, srv, _ := testProxyTo(t, dead, nil, nil, func(p *proxy) {
		p.warn = ratelog.New(slog.New(slog.NewTextHandler(&buf, nil)), time.Minute)
	})
	for range 5 {
		resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d, want 502", resp.StatusCode)
		}
	}
	if n := strings.Count(buf.String(), "engine request failed"); n != 1 {
		t.Errorf("%d warnings for 5 failed requests, want 1:\n%s", n, buf.String())
	}
}
