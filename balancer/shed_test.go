package balancer

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/epp"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/openai"
)

// TestShedDelay: with routing.shed_delay set, a request that every
// replica's queued prefill would delay past it is refused before any replica
// sees it, in the shape each mode answers load with: proxy mode 503 with
// Retry-After and an OpenAI error, counted as shed; the endpoint picker 429.
// Explain shows the refusal with every candidate's estimate. Once the
// queues are gone the same request is served.
func TestShedDelay(t *testing.T) {
	ups := []*upstream{newUpstream(t, okHandler), newUpstream(t, okHandler)}
	cfg := eppTestConfig(ups[0].srv.URL, ups[1].srv.URL)
	cfg.Models[0].Routing.ShedDelay = 100 * time.Millisecond
	b, srv := newTestBalancer(t, cfg)
	// 100,000 uncached tokens sent to each replica and not yet prefilled:
	// seconds of queue on the default cost model.
	snap := b.fleet.Snapshot()
	var tickets []func()
	for _, rep := range snap.Replicas {
		tk, ok := rep.TryAcquire(100_000, 0)
		if !ok {
			t.Fatal("no slot")
		}
		tickets = append(tickets, func() { rep.Counters.Done(100_000, 0, tk, false) })
	}

	post := func() (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	resp, body := post()
	var e struct {
		Error struct{ Message, Type string } `json:"error"`
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("loaded fleet: %d, Retry-After %q: %s; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if err := json.Unmarshal(body, &e); err != nil || !strings.Contains(e.Error.Message, "too loaded") || e.Error.Type == "" {
		t.Errorf("shed answer %s: want an OpenAI error naming the load", body)
	}
	for i, u := range ups {
		if n := len(u.hits); n != 0 {
			t.Errorf("replica %d got %d requests of a shed one", i, n)
		}
	}
	if m := scrape(t, b); !strings.Contains(m, `inferrail_balancer_requests_total{mode="proxy",model="m",outcome="shed",route="chat"} 1`) {
		t.Errorf("no shed outcome counted:\n%s", m)
	}

	// Explain shows the refusal and why: no pick, every candidate's
	// estimate past shed_delay.
	admin := newAdminServer(t, b)
	ex := explainOf(t, admin.URL, chatBody)
	if ex.Pick != "" || ex.Reason != string(route.ReasonShed) || len(ex.Candidates) != 2 {
		t.Errorf("explain on the loaded fleet: pick %q reason %q, %d candidates; want no pick, reason shed, both", ex.Pick, ex.Reason, len(ex.Candidates))
	}
	least := math.Inf(1)
	for _, c := range ex.Candidates {
		if c.EstimatedTTFTMS == nil || *c.EstimatedTTFTMS < 100 {
			t.Errorf("candidate %s: estimated TTFT %v, want past shed_delay (100 ms)", c.ID, c.EstimatedTTFTMS)
		}
		if c.QueueWaitMS != nil {
			least = min(least, *c.QueueWaitMS) // the delay its queue adds
		}
	}
	// Retry-After: how far the least delayed replica's queue is past
	// shed_delay, in whole seconds, rounded up (seconds of queue here).
	if want := strconv.Itoa(int(math.Ceil((least - 100) / 1000))); resp.Header.Get("Retry-After") != want || want == "1" {
		t.Errorf("Retry-After %q, want %s: the least queue wait %.0f ms past shed_delay", resp.Header.Get("Retry-After"), want, least)
	}
	var table strings.Builder
	if err := ex.WriteTable(&table); err != nil || !strings.Contains(table.String(), "no pick: reason shed") {
		t.Errorf("explain's table: %v\n%s", err, table.String())
	}

	_, err := eppPick(t, &eppPicker{b: b}, chatBody, epp.Subset{})
	var oe *openai.Error
	ref, ok := errors.AsType[*epp.Refusal](err)
	if !errors.As(err, &oe) || oe.Status != http.StatusTooManyRequests || !ok || ref.RetryAfter < time.Second {
		t.Errorf("endpoint picker on the loaded fleet: %v, want 429 with a wait of the queue past shed_delay", err)
	}
	// Both refusals are decisions with reason shed.
	if m := scrape(t, b); !strings.Contains(m, `inferrail_balancer_route_decisions_total{model="m",reason="shed"} 2`) {
		t.Errorf("route decisions lack the two sheds:\n%s", m)
	}

	for _, done := range tickets {
		done()
	}
	if resp, body := post(); resp.StatusCode != http.StatusOK {
		t.Fatalf("idle fleet: %d: %s", resp.StatusCode, body)
	}
}
