package enginesim

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

// TestDebugRequestsListsTheEnginesTimings: GET /inferrail/debug/requests
// lists each finished request under the client's X-Request-Id (and the
// front end's suffix), with its prompt, cached and output tokens and the
// engine's own TTFT, from its arrival to its first token and within its
// end-to-end time, and its arrival by the wall clock; the second of two equal prompts hits the first's blocks.
func TestDebugRequestsListsTheEnginesTimings(t *testing.T) {
	cfg := simTestConfig()
	cfg.Engine.ZeroLatency = false
	h := newSimHarness(t, cfg)
	prompt := strings.Repeat("the quick brown fox ", 12)
	ids := []string{"bench-1f-s3-t0", "bench-1f-s3-t1"}
	before := time.Now()
	for _, id := range ids {
		if rec := h.do("POST", "/v1/completions", `{"prompt":"`+prompt+`","max_tokens":4,"ignore_eos":true}`, "X-Request-Id", id); rec.Code != 200 {
			t.Fatalf("completion %s: %d %s", id, rec.Code, rec.Body)
		}
	}
	var got struct {
		Ranks []struct {
			Rank     int               `json:"rank"`
			Requests []FinishedRequest `json:"requests"`
		} `json:"ranks"`
	}
	after := time.Now()
	mustJSON(t, h.do("GET", "/inferrail/debug/requests", "").Body.Bytes(), &got)
	if len(got.Ranks) != 1 || len(got.Ranks[0].Requests) != 2 {
		t.Fatalf("listing %+v, want one rank with two requests", got)
	}
	promptTokens := len(simtok.Encode(prompt, true))
	for i, r := range got.Ranks[0].Requests {
		if j := strings.LastIndexByte(r.ID, '-'); j < 0 || r.ID[:j] != ids[i] {
			t.Errorf("request %d: id %q, want %q and a suffix", i, r.ID, ids[i])
		}
		if r.PromptTokens != promptTokens || r.OutputTokens != 4 || r.FinishReason != "length" || r.Preemptions != 0 {
			t.Errorf("request %d: %+v, want %d prompt tokens, 4 output tokens, finish length, no preemption", i, r, promptTokens)
		}
		if r.Arrival.Before(before) || r.Arrival.Add(r.E2E).After(after) || (i > 0 && !r.Arrival.After(got.Ranks[0].Requests[i-1].Arrival)) {
			t.Errorf("request %d: arrival %v and E2E %v, want within the requests' wall-clock span %v–%v, after the one before", i, r.Arrival, r.E2E, before, after)
		}
		if r.TTFT <= 0 || r.TTFT > r.E2E || r.Queue < 0 || r.Queue > r.TTFT {
			t.Errorf("request %d: queue %v, TTFT %v, E2E %v: want 0 ≤ queue ≤ TTFT, 0 < TTFT ≤ E2E", i, r.Queue, r.TTFT, r.E2E)
		}
	}
	if first, second := got.Ranks[0].Requests[0].CachedTokens, got.Ranks[0].Requests[1].CachedTokens; first != 0 || second < 16 {
		t.Errorf("cached tokens %d then %d: want 0, then the first's full blocks", first, second)
	}
}

// TestRequestLogKeepsTheLast: past its size the log drops the oldest, and
// lists the rest oldest first.
func TestRequestLogKeepsTheLast(t *testing.T) {
	var l requestLog
	for i := range requestLogSize + 3 {
		l.add(FinishedRequest{ID: strconv.Itoa(i)})
	}
	got := l.list()
	if len(got) != requestLogSize {
		t.Fatalf("%d listed, want %d", len(got), requestLogSize)
	}
	for i, r := range got {
		if want := strconv.Itoa(i + 3); r.ID != want {
			t.Fatalf("entry %d is %q, want %q", i, r.ID, want)
		}
	}
}
