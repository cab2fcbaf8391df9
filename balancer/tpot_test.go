package balancer

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTPOTGuardFollowsStreams checks cost_model's TPOT guard through the
// client and admin HTTP surface (docs/routing.md#the-tpot-guard): a long
// prompt that the estimate sends to the replica streaming a 3-token answer
// goes instead to the one whose queue it waits behind, while the answer
// streams, and no longer once the answer has ended; without an objective
// it stays on the estimate's choice, and so it does when the answer is late
// already (its first token seen 250 ms before, two gaps to go: past 200 ms
// whatever happens), which only its first token, as the balancer saw it
// stream by, tells.
func TestTPOTGuardFollowsStreams(t *testing.T) {
	for _, tc := range []struct{ guarded, late bool }{{true, false}, {false, false}, {true, true}} {
		t.Run(fmt.Sprintf("guarded=%v,late=%v", tc.guarded, tc.late), func(t *testing.T) {
			testTPOTGuard(t, tc.guarded, tc.late)
		})
	}
}

func testTPOTGuard(t *testing.T, guarded, late bool) {
	// Each upstream streams: the first long prompt holds its first token
	// until release closes, the 3-token answer sends its first token and
	// holds the other two, anything else answers at once.
	release, answerDone := make(chan struct{}), make(chan struct{})
	stream := func(w http.ResponseWriter, r *http.Request, body []byte) {
		token := startStream(w)
		switch {
		case strings.Contains(string(body), "first-long"):
			<-release
		case strings.Contains(string(body), `"max_tokens":3`):
			token()
			<-answerDone
		}
		token()
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		stream(w, r, body)
	}
	u0, u1 := httptest.NewServer(http.HandlerFunc(handler)), httptest.NewServer(http.HandlerFunc(handler))
	t.Cleanup(u0.Close)
	t.Cleanup(u1.Close)
	cfg := testConfig(u0.URL, u1.URL)
	cfg.Models[0].Routing.SpreadMargin = 0 // the estimate decides, not the turn
	switch {
	case late:
		// A 200 ms budget that 250 ms since the first token has spent.
		cfg.Models[0].Routing.SLO.TPOT = 100 * time.Millisecond
	case guarded:
		// A 2 s budget and steps of 1.7 s of prefill (the upstreams are
		// fakes; only the estimate reads these): the prompt's two steps in
		// the answer's two gaps break it however long the machine takes,
		// up to 2 s, between the answer's first token and the decision.
		cfg.Models[0].Routing.SLO.TPOT = time.Second
		cfg.Models[0].Routing.Cost.LinearTokPerSec = 4700
	}
	b, srv := newTestBalancer(t, cfg)
	admin := newAdminServer(t, b)
	// However the test ends, the held streams end before the upstreams
	// close (registered after them, this runs before).
	t.Cleanup(func() {
		for _, ch := range []chan struct{}{release, answerDone} {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	})
	// The builtin:sim tokenizer makes two tokens of each " lorem".
	words := func(tag string, n int) string { return tag + strings.Repeat(" lorem", n) }
	open := func(content string, maxTokens int) (*http.Response, *bufio.Reader) {
		body := fmt.Sprintf(`{"model":"m","stream":true,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, maxTokens, content)
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp, bufio.NewReader(resp.Body)
	}
	// 1. A 4,000-token prompt holds its first token on one replica (q):
	// 4,000 tokens queued there, under a step of prefill. The balancer
	// answers its headers with its first byte, so the decision log says
	// where it went.
	go func() {
		body := fmt.Sprintf(`{"model":"m","stream":true,"max_tokens":64,"messages":[{"role":"user","content":%q}]}`, words("first-long", 2000))
		if resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body)); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	var q string
	for q == "" {
		if t.Context().Err() != nil {
			t.Fatal("the first long prompt was never decided")
		}
		if dr := getDecisions(t, admin.URL); len(dr.Decisions) > 0 {
			q = dr.Decisions[0].Winner
		}
		time.Sleep(time.Millisecond)
	}
	// 2. A 3-token answer goes to the idle one (a) and streams its first
	// token.
	short, sr := open("a short question", 3)
	a := short.Header.Get(HeaderReplica)
	if a == q || a == "" {
		t.Fatalf("the short answer went to %q, the long prompt's queue is on %q", a, q)
	}
	if line, err := sr.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("the short answer's first event: %q, %v", line, err)
	}
	if late {
		time.Sleep(250 * time.Millisecond)
	}
	// 3. A 16,000-token prompt: replica a's estimate is the lower by
	// q's queue, but its prefill would take two steps of the answer's two
	// gaps (200 ms of a 100 ms TPOT).
	second, body := post(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"user","content":%q}]}`, words("second-long", 8000)))
	if n, _ := strconv.Atoi(second.Header.Get(HeaderPromptTokens)); n < 15000 {
		t.Fatalf("the second long prompt is %d tokens, want about 16,000", n)
	}
	if !strings.Contains(body, "[DONE]") {
		t.Fatalf("the second long prompt's answer: %q", body)
	}
	got := second.Header.Get(HeaderReplica)
	last := func() string {
		dr := getDecisions(t, admin.URL)
		return dr.Decisions[len(dr.Decisions)-1].Reason
	}
	if late {
		guarded = false // nothing to save: the estimate's choice stands
	}
	if guarded && (got != q || last() != "tpot_guard") {
		t.Fatalf("guarded: the second long prompt went to %s (%s), want %s (tpot_guard), away from the answer on %s", got, last(), q, a)
	}
	if !guarded && (got != a || last() != "lowest_ttft") {
		t.Fatalf("no answer to guard: the second long prompt went to %s (%s), want %s (lowest_ttft)", got, last(), a)
	}
	// 4. Once the answer has ended, the next long prompt goes by the
	// estimate again.
	close(answerDone)
	if _, err := io.ReadAll(sr); err != nil {
		t.Fatal(err)
	}
	short.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for b.fleet.Snapshot().Replicas[0].Counters.InFlight.Load()+b.fleet.Snapshot().Replicas[1].Counters.InFlight.Load() > 1 {
		if time.Now().After(deadline) {
			t.Fatal("the short answer's lease was never released")
		}
		time.Sleep(time.Millisecond)
	}
	third, _ := post(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"user","content":%q}]}`, words("third-long", 8000)))
	if got := third.Header.Get(HeaderReplica); got != a || last() != "lowest_ttft" {
		t.Fatalf("after the answer ended the third long prompt went to %s (%s), want %s (lowest_ttft)", got, last(), a)
	}
}
