package balancer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/balancer/decisionlog"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/openai"
)

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func TestRoutesAndErrors(t *testing.T) {
	up := newUpstream(t, okHandler)
	_, srv := newTestBalancer(t, testConfig(up.srv.URL))
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"unknown path", "GET", "/v1/nope", "", 404},
		{"wrong method chat", "GET", "/v1/chat/completions", "", 405},
		{"wrong method models", "POST", "/v1/models", "{}", 405},
		{"not json", "POST", "/v1/chat/completions", "{", 400},
		{"not an object", "POST", "/v1/chat/completions", "[1,2]", 400},
		{"model not a string", "POST", "/v1/completions", `{"model":5,"prompt":"x"}`, 400},
		{"unknown model", "POST", "/v1/completions", `{"model":"zzz","prompt":"x"}`, 404},
		{"ok completions", "POST", "/v1/completions", `{"model":"m","prompt":"x"}`, 200},
		{"ok chat", "POST", "/v1/chat/completions", chatBody, 200},
		{"ok embeddings", "POST", "/v1/embeddings", `{"model":"m","input":"x"}`, 200},
		{"models", "GET", "/v1/models", "", 200},
		{"health", "GET", "/health", "", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.want, body)
			}
			if tc.want >= 400 {
				if _, ok := openai.ParseError(body); !ok {
					t.Errorf("error body not in OpenAI shape: %s", body)
				}
			}
		})
	}
}

func TestHeadersAndAliasRewrite(t *testing.T) {
	up := newUpstream(t, okHandler)
	_, srv := newTestBalancer(t, testConfig(up.srv.URL))
	body := `{"messages":[{"role":"user","content":"hi"}],  "model" : "alias-m","x":[1, 2]}`
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("X-Request-Id", "req-123")
	req.Header.Set("Connection", "close, X-Hop")
	req.Header.Set("X-Hop", "secret")
	req.Header.Set("X-Keep", "yes")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := map[string]string{}
	for _, h := range []string{HeaderRequestID, HeaderReplica, HeaderPromptTokens, HeaderCachedTokens} {
		got[h] = resp.Header.Get(h)
	}
	if got[HeaderRequestID] != "req-123" || got[HeaderReplica] != "r0" || got[HeaderPromptTokens] == "" || got[HeaderCachedTokens] == "" {
		t.Errorf("response headers = %v", got)
	}
	in := <-up.hits
	sent := <-up.bodies
	want := `{"messages":[{"role":"user","content":"hi"}],  "model" : "m","x":[1, 2]}`
	if diff := cmp.Diff(want, string(sent)); diff != "" {
		t.Errorf("forwarded body (-want +got):\n%s", diff)
	}
	if in.Header.Get("X-Hop") != "" || in.Header.Get("X-Keep") != "yes" || in.Header.Get("X-Request-Id") != "req-123" {
		t.Errorf("forwarded headers = %v", in.Header)
	}
}

func TestRetryBeforeFirstByte(t *testing.T) {
	bad := newUpstream(t, statusHandler(http.StatusServiceUnavailable))
	good := newUpstream(t, okHandler)
	// A port nobody listens on: a dial error.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name  string
		urls  []string
		want  int
		tries int
	}{
		{"503 then ok", []string{bad.srv.URL, good.srv.URL}, 200, 2},
		{"dial error then ok", []string{dead, good.srv.URL}, 200, 2},
		{"all 503: last answer passes", []string{bad.srv.URL}, 503, 1},
		{"all dead: 502", []string{dead}, 502, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.urls...)
			cfg.Models[0].Routing.Policy = "round_robin"
			cfg.Health.FailureThreshold = 0
			_, srv := newTestBalancer(t, cfg)
			for i := 0; i < 4; i++ {
				resp, body := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":"x"}`)
				if resp.StatusCode != tc.want {
					t.Fatalf("request %d: status %d, want %d: %s", i, resp.StatusCode, tc.want, body)
				}
				if tc.want >= 500 {
					if _, ok := openai.ParseError([]byte(body)); !ok {
						t.Errorf("not an OpenAI error: %s", body)
					}
				}
			}
		})
	}
}

func TestNoRetryAfterFirstByte(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	// Every replica sends headers and part of the body, then breaks.
	h := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	a, b2 := newUpstream(t, h), newUpstream(t, h)
	_, srv := newTestBalancer(t, testConfig(a.srv.URL, b2.srv.URL))
	resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"x","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Errorf("the broken stream ended cleanly for the client")
	}
	if !strings.HasPrefix(string(got), "data: {}") {
		t.Errorf("client got %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("upstream calls = %d, want 1 (a started stream is never replayed)", calls)
	}
}

func TestFullFleetGets503RetryAfter(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		okHandler(w, r)
	})
	cfg := testConfig(up.srv.URL)
	cfg.Replicas[0].MaxConcurrency = 2
	_, srv := newTestBalancer(t, cfg)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			resp, _ := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":"x"}`)
			if resp.StatusCode != 200 {
				t.Errorf("held request: status %d", resp.StatusCode)
			}
		})
	}
	<-started
	<-started
	resp, body := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":"x"}`)
	close(release)
	wg.Wait()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: status %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// TestClientDisconnectCancelsUpstream: a client that goes away aborts its
// upstream request, whether its stream had begun or the balancer was still
// waiting for the first event after the upstream's headers (Peek).
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	for _, firstEvent := range []bool{true, false} {
		t.Run(fmt.Sprintf("first event %v", firstEvent), func(t *testing.T) {
			gone := make(chan struct{})
			started := make(chan struct{})
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				if firstEvent {
					_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n")
				}
				w.(http.Flusher).Flush()
				close(started)
				<-r.Context().Done()
				close(gone)
			})
			b, srv := newTestBalancer(t, testConfig(up.srv.URL))
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/completions", strings.NewReader(`{"model":"m","prompt":"x","stream":true}`))
			answered := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				answered <- err
			}()
			<-started
			if firstEvent {
				if err := <-answered; err != nil { // the headers came with the first event
					t.Fatal(err)
				}
			}
			cancel()
			<-gone // the upstream saw the cancellation; a hang here fails the test by timeout
			rep := b.fleet.Snapshot().Replicas[0]
			waitFor(t, func() bool { return rep.Counters.InFlight.Load() == 0 })
		})
	}
}

// A request's lease reserves KV memory for its output: its max_tokens
// capped at routing.cost.expected_output_tokens (256 by default), 256 when it
// states none; released when it ends.
func TestOutputReserveFollowsMaxTokens(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(3)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		started.Done()
		<-release
		okHandler(w, r)
	})
	b, srv := newTestBalancer(t, testConfig(up.srv.URL))
	var done sync.WaitGroup
	for _, extra := range []string{`,"max_tokens":64`, `,"max_completion_tokens":1000`, ``} {
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"x"`+extra+`}`))
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	started.Wait()
	rep := b.fleet.Snapshot().Replicas[0]
	if got, want := rep.Counters.OutputReserve.Load(), int64(64+256+256); got != want {
		t.Errorf("output reserve %d with three requests in flight, want %d", got, want)
	}
	close(release)
	done.Wait()
	waitFor(t, func() bool { return rep.Counters.InFlight.Load() == 0 })
	if got := rep.Counters.OutputReserve.Load(); got != 0 {
		t.Errorf("output reserve %d after every request ended, want 0", got)
	}
}

func TestModelsList(t *testing.T) {
	up := newUpstream(t, okHandler)
	_, srv := newTestBalancer(t, testConfig(up.srv.URL))
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list openai.ModelList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"m", "alias-m"}, ids); diff != "" {
		t.Errorf("model ids (-want +got):\n%s", diff)
	}
}

func TestPromptTokensHeaderMatchesTokenizer(t *testing.T) {
	up := newUpstream(t, okHandler)
	_, srv := newTestBalancer(t, testConfig(up.srv.URL))
	resp, _ := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}`)
	if got := resp.Header.Get(HeaderPromptTokens); got != strconv.Itoa(20) {
		t.Errorf("prompt tokens = %q, want 20", got)
	}
}

// TestRunServesAdminApartFromClients runs the whole balancer on port 0: the
// admin port serves metrics and healthz, the client port does not.
func TestRunServesAdminApartFromClients(t *testing.T) {
	up := newUpstream(t, okHandler)
	cfg := testConfig(up.srv.URL)
	cfg.Listen, cfg.Admin = "127.0.0.1:0", "127.0.0.1:0"
	reg := prometheus.NewRegistry()
	b, err := New(cfg, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	client, admin, err := b.Addrs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, "http://"+client+"/v1/completions", `{"model":"m","prompt":"x"}`); resp.StatusCode != 200 {
		t.Fatalf("completion: %d", resp.StatusCode)
	}
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// The request counter is incremented as the handler returns, just
	// after the client has read the whole response: wait for it.
	var code int
	var metrics string
	waitFor(t, func() bool {
		code, metrics = get("http://" + admin + "/metrics")
		return code != 200 || strings.Contains(metrics, `inferrail_balancer_requests_total{mode="proxy",model="m",outcome="ok",route="completions"} 1`)
	})
	if code != 200 || !strings.Contains(metrics, `inferrail_balancer_requests_total{mode="proxy",model="m",outcome="ok",route="completions"} 1`) ||
		!strings.Contains(metrics, `inferrail_balancer_replica_state{replica="r0",state="healthy"} 1`) {
		t.Errorf("admin /metrics: %d\n%s", code, metrics)
	}
	if code, _ := get("http://" + admin + "/healthz"); code != 200 {
		t.Errorf("admin /healthz: %d", code)
	}
	// Clients may speak h2c (HTTP/2 with prior knowledge).
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	h2 := &http.Client{Transport: &http.Transport{Protocols: &protos}}
	resp, err := h2.Post("http://"+client+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"x"}`))
	if err != nil {
		t.Fatalf("h2c request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Errorf("h2c request: %s over %s", resp.Status, resp.Proto)
	}
	h2.CloseIdleConnections()
	if code, _ := get("http://" + client + "/metrics"); code != 404 {
		t.Errorf("client /metrics: %d, want 404", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestReplicaDownWhileWaitingMovesRequest: a request waiting for its first
// byte on a replica that gets ejected moves to another replica.
func TestReplicaDownWhileWaitingMovesRequest(t *testing.T) {
	hung := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	good := newUpstream(t, okHandler)
	cfg := testConfig(hung.srv.URL, good.srv.URL)
	cfg.Models[0].Routing.Policy = "round_robin"
	cfg.Health.FailureThreshold = 1
	cfg.Health.MaxEjectedShare = 1
	b, srv := newTestBalancer(t, cfg)
	type result struct {
		code    int
		replica string
	}
	done := make(chan result, 1)
	go func() {
		resp, _ := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":"x"}`)
		done <- result{resp.StatusCode, resp.Header.Get(HeaderReplica)}
	}()
	select {
	case <-hung.hits:
	case <-good.hits:
		t.Fatal("round_robin (seed 1) did not start on r0")
	}
	b.fleet.ReportFailure(b.fleet.Snapshot().Replica("r0"))
	got := <-done
	if got.code != 200 || got.replica != "r1" {
		t.Errorf("got %d from %q, want 200 from r1", got.code, got.replica)
	}
}

// TestRetriesTheOnlyReplica: with every replica tried, a retry goes back to
// one already tried (untried replicas only come first).
func TestRetriesTheOnlyReplica(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n < 3 {
			statusHandler(http.StatusServiceUnavailable)(w, r)
			return
		}
		okHandler(w, r)
	})
	cfg := testConfig(up.srv.URL)
	cfg.Health.FailureThreshold = 0
	_, srv := newTestBalancer(t, cfg)
	resp, body := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":"x"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 {
		t.Errorf("upstream calls = %d, want 3", calls)
	}
}

// TestServerTiming checks the balancer's Server-Timing on a proxied answer:
// the engine's own metrics kept, then the balancer's route and upstream
// times, the upstream one at least as long as the engine took to answer
// and both within the client's wait.
func TestServerTiming(t *testing.T) {
	const engineWait = 30 * time.Millisecond
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(engineWait)
		w.Header().Set("Server-Timing", `engine;desc="queue, prefill";dur=5`)
		okHandler(w, r)
	})
	_, srv := newTestBalancer(t, testConfig(up.srv.URL))
	start := time.Now()
	resp, _ := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":"x"}`)
	waited := time.Since(start)
	vals := resp.Header.Values(HeaderServerTiming)
	if len(vals) != 2 || vals[0] != `engine;desc="queue, prefill";dur=5` {
		t.Fatalf("Server-Timing %q, want the engine's then the balancer's", vals)
	}
	m := regexp.MustCompile(`^` + TimingRoute + `;dur=([0-9.]+);desc=([a-z_]+), ` + TimingUpstream + `;dur=([0-9.]+)(?:,|$)`).FindStringSubmatch(vals[1])
	if m == nil || m[2] != string(route.ReasonOnlyCandidate) {
		t.Fatalf("the balancer's Server-Timing %q: want route, with the decision's reason (%s) as its desc, then upstream", vals[1], route.ReasonOnlyCandidate)
	}
	routed, _ := strconv.ParseFloat(m[1], 64)
	upstream, _ := strconv.ParseFloat(m[3], 64)
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	if ms(upstream) < engineWait || routed < 0 || ms(routed+upstream) > waited {
		t.Errorf("route %.3f ms, upstream %.3f ms; want upstream ≥ %v and both within the client's %v", routed, upstream, engineWait, waited)
	}
}

// TestServerTimingCarriesTheEstimate: a cost_model answer's Server-Timing
// carries the decision's estimated TTFT on the replica that answered and its
// queue and memory waits, the figures the decision log records for that
// request's winner; a policy without estimates adds none.
func TestServerTimingCarriesTheEstimate(t *testing.T) {
	ups := []*upstream{newUpstream(t, okHandler), newUpstream(t, okHandler)}
	b, srv := newTestBalancer(t, testConfig(ups[0].srv.URL, ups[1].srv.URL))
	// Prefill queued on both replicas, so the pick waits for some.
	for i, rep := range b.fleet.Snapshot().Replicas {
		tk, ok := rep.TryAcquire(4_000*(i+1), 0)
		if !ok {
			t.Fatal("no slot")
		}
		t.Cleanup(func() { rep.Counters.Done(4_000*(i+1), 0, tk, false) })
	}
	resp, _ := post(t, srv.URL+"/v1/chat/completions", longChat)
	timing := strings.Join(resp.Header.Values(HeaderServerTiming), ", ")
	dur := func(name string) (float64, bool) {
		m := regexp.MustCompile(`(?:^|, )` + regexp.QuoteMeta(name) + `;dur=([0-9.]+)(?:,|$)`).FindStringSubmatch(timing)
		if m == nil {
			return 0, false
		}
		f, err := strconv.ParseFloat(m[1], 64)
		return f, err == nil
	}
	est, ok1 := dur(TimingEstimate)
	queue, ok2 := dur(TimingQueueWait)
	mem, ok3 := dur(TimingMemoryWait)
	lowest, ok4 := dur(TimingLowestEstimate)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatalf("Server-Timing %q: want %s, %s, %s and %s", timing, TimingEstimate, TimingQueueWait, TimingMemoryWait, TimingLowestEstimate)
	}
	reason := regexp.MustCompile(`(?:^|, )` + TimingRoute + `;dur=[0-9.]+;desc=([a-z_]+)(?:,|$)`).FindStringSubmatch(timing)

	admin := newAdminServer(t, b)
	dr := getDecisions(t, admin.URL)
	if len(dr.Decisions) != 1 || dr.Decisions[0].RequestID != resp.Header.Get(HeaderRequestID) {
		t.Fatalf("decisions %+v, want the one request's", dr.Decisions)
	}
	rec := dr.Decisions[0]
	var win *decisionlog.Candidate
	for i := range rec.Candidates {
		if rec.Candidates[i].ID == rec.Winner && rec.Winner == resp.Header.Get(HeaderReplica) {
			win = &rec.Candidates[i]
		}
	}
	if win == nil || win.EstimatedTTFTMS == nil || win.QueueWaitMS == nil {
		t.Fatalf("decision %+v: no estimate for the replica that answered (%s)", rec, resp.Header.Get(HeaderReplica))
	}
	logged := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 0.002 }
	if !near(est, *rec.EstimatedTTFTMS) || !near(queue, *win.QueueWaitMS) || !near(mem, logged(win.MemoryWaitMS)) || queue <= 0 || est+0.001 < queue+mem { // each rounded to the µs
		t.Errorf("Server-Timing estimate %.3f, queue %.3f, memory %.3f ms; the decision log's %.3f, %.3f, %.3f; want equal, a queue, and the waits within the estimate",
			est, queue, mem, *rec.EstimatedTTFTMS, *win.QueueWaitMS, logged(win.MemoryWaitMS))
	}
	least := math.Inf(1)
	for _, c := range rec.Candidates {
		if c.EstimatedTTFTMS != nil {
			least = min(least, *c.EstimatedTTFTMS)
		}
	}
	if !near(lowest, least) || lowest > est+0.001 {
		t.Errorf("Server-Timing lowest estimate %.3f ms; the decision log's candidates' lowest %.3f, the pick's %.3f: want the log's, at most the pick's", lowest, least, est)
	}
	if reason == nil || reason[1] != rec.Reason {
		t.Errorf("Server-Timing %q: want the route metric's desc to be the decision log's reason %q", timing, rec.Reason)
	}

	cfg := testConfig(ups[0].srv.URL)
	cfg.Routing.DefaultPolicy = route.PolicyRoundRobin
	_, rr := newTestBalancer(t, cfg)
	resp, _ = post(t, rr.URL+"/v1/chat/completions", longChat)
	if v := strings.Join(resp.Header.Values(HeaderServerTiming), ", "); strings.Contains(v, TimingEstimate) || !strings.Contains(v, TimingRoute) {
		t.Errorf("round_robin's Server-Timing %q: want the balancer's times and no estimate", v)
	}
}

// getDecisions reads GET /debug/decisions of the admin server at adminURL.
func getDecisions(t *testing.T, adminURL string) DecisionsResponse {
	t.Helper()
	resp, err := http.Get(adminURL + "/debug/decisions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var dr DecisionsResponse
	if err := json.NewDecoder(resp.Body).Decode(&dr); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/decisions: %d, %v", resp.StatusCode, err)
	}
	return dr
}

// TestDecisionRecordsTheTurn: the decision log names a chat request's turn
// in its conversation, first or later, and none for a completions request.
func TestDecisionRecordsTheTurn(t *testing.T) {
	up := newUpstream(t, okHandler)
	b, srv := newTestBalancer(t, testConfig(up.srv.URL))
	admin := newAdminServer(t, b)
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"and?"}]}`,
		`{"model":"m","prompt":"hello"}`,
	} {
		path := "/v1/chat/completions"
		if strings.Contains(body, `"prompt"`) {
			path = "/v1/completions"
		}
		post(t, srv.URL+path, body)
	}
	var turns []string
	for _, d := range getDecisions(t, admin.URL).Decisions {
		turns = append(turns, d.Turn)
	}
	if want := []string{"first", "later", ""}; !slices.Equal(turns, want) {
		t.Errorf("turns %q, want %q", turns, want)
	}
}
