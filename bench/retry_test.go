package bench

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// refusingHandler refuses the first refuse attempts of every request (by
// X-Request-Id) with status and Retry-After retryAfter, then answers as
// stream does.
type refusingHandler struct {
	stream     *streamHandler
	refuse     int
	status     int
	retryAfter string

	mu       sync.Mutex
	attempts map[string]int
}

func (h *refusingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	id := r.Header.Get("X-Request-Id")
	h.attempts[id]++
	n := h.attempts[id]
	h.mu.Unlock()
	if n <= h.refuse {
		if h.retryAfter != "" {
			w.Header().Set("Retry-After", h.retryAfter)
		}
		http.Error(w, `{"error":{"message":"overloaded","type":"overloaded","code":"overloaded"}}`, h.status)
		return
	}
	h.stream.ServeHTTP(w, r)
}

// A request refused with 429 or 503 is sent again after its Retry-After
// while Config.Retries allows, its TTFT counted from its scheduled send with
// the waits in it, and its session goes on; without retries, or once they
// are spent, the refusal fails the request and ends its session. Any other
// status is never retried (a request that may have reached an engine is not
// sent twice).
func TestRunRetriesRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		retries, refuse, status int
		retryAfter              string
		ok                      bool
		wantRetries             int
		wantTTFT                time.Duration // of turn 0, when ok
	}{
		"no retries":              {0, 1, http.StatusServiceUnavailable, "2", false, 0, 0},
		"503 retried after 2 s":   {2, 1, http.StatusServiceUnavailable, "2", true, 1, 2050 * time.Millisecond},
		"429 retried twice":       {2, 2, http.StatusTooManyRequests, "1", true, 2, 2050 * time.Millisecond},
		"no Retry-After: backoff": {2, 2, http.StatusServiceUnavailable, "", true, 2, 1550 * time.Millisecond},
		"retries spent":           {2, 3, http.StatusServiceUnavailable, "1", false, 2, 0},
		"500 is not retried":      {2, 1, http.StatusInternalServerError, "1", false, 0, 0},
		"Retry-After past 60 s":   {1, 1, http.StatusServiceUnavailable, "3600", true, 1, 550 * time.Millisecond},
		// synctest's clock starts at midnight UTC, 2000-01-01.
		"Retry-After as a date":      {1, 1, http.StatusServiceUnavailable, time.Date(2000, 1, 1, 0, 0, 3, 0, time.UTC).Format(http.TimeFormat), true, 1, 3050 * time.Millisecond},
		"Retry-After not a duration": {1, 1, http.StatusServiceUnavailable, "soon", true, 1, 550 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := &refusingHandler{stream: &streamHandler{ttft: 50 * time.Millisecond, itl: 10 * time.Millisecond, tokens: 3},
					refuse: c.refuse, status: c.status, retryAfter: c.retryAfter, attempts: map[string]int{}}
				cfg := testConfig()
				cfg.Retries = c.retries
				r, err := NewRunner(cfg, nil, startPipeServer(t, h))
				if err != nil {
					t.Fatal(err)
				}
				s := Session{Turns: []Turn{{User: "ab cd ", MaxTokens: 3}, {User: "ef gh ", MaxTokens: 3, Think: time.Second}}}
				res, err := r.Run(context.Background(), []Session{s})
				if err != nil {
					t.Fatal(err)
				}
				rec := res.Records[0]
				if rec.OK() != c.ok || rec.Retries != c.wantRetries {
					t.Fatalf("turn 0: ok %v after %d retries (status %d, %q), want ok %v after %d", rec.OK(), rec.Retries, rec.Status, rec.Err, c.ok, c.wantRetries)
				}
				if !c.ok {
					if rec.Status != c.status || !strings.Contains(rec.Err, "overloaded") {
						t.Errorf("turn 0 failed with status %d, %q; want %d and the server's error", rec.Status, rec.Err, c.status)
					}
					if len(res.Records) != 1 {
						t.Errorf("%d records, want 1: a failed turn ends its session", len(res.Records))
					}
					return
				}
				if rec.TTFT != c.wantTTFT {
					t.Errorf("turn 0 TTFT %v, want %v: from its scheduled send, the waits included", rec.TTFT, c.wantTTFT)
				}
				if len(res.Records) != 2 || !res.Records[1].OK() {
					t.Fatalf("records %+v: the session must go on after a retried turn", res.Records)
				}
			})
		})
	}
}

func TestRetryWait(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	header := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, c := range []struct {
		h    http.Header
		n    int
		want time.Duration
	}{
		{header("Retry-After", "2"), 0, 2 * time.Second},
		{header("Retry-After", "1.5"), 3, 1500 * time.Millisecond},
		{header("Retry-After", "60"), 0, 60 * time.Second},
		{header("Retry-After-Ms", "250", "Retry-After", "9"), 0, 250 * time.Millisecond},
		{header("Retry-After-Ms", "x", "Retry-After", "9"), 0, 9 * time.Second},
		{header("Retry-After", now.Add(5*time.Second).Format(http.TimeFormat)), 0, 5 * time.Second},
		// Not more than 0, past 60 s, or unreadable: the backoff.
		{header("Retry-After", "0"), 0, 500 * time.Millisecond},
		{header("Retry-After", "61"), 1, time.Second},
		{header("Retry-After", "-3"), 2, 2 * time.Second},
		{header("Retry-After", "NaN"), 3, 4 * time.Second},
		{header("Retry-After", now.Add(-time.Second).Format(http.TimeFormat)), 4, 8 * time.Second},
		{header(), 9, 8 * time.Second},
	} {
		if got := retryWait(c.h, c.n, now); got != c.want {
			t.Errorf("retryWait(%v, %d) = %v, want %v", c.h, c.n, got, c.want)
		}
	}
}

// FuzzRetryWait: whatever a server sends, the wait is within (0, 60 s].
func FuzzRetryWait(f *testing.F) {
	for _, s := range []string{"2", "0", "1e400", "-1", "NaN", "Inf", "Sun, 06 Nov 1994 08:49:37 GMT", "", "60.0000001"} {
		f.Add(s, s, 1)
	}
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ms, after string, n int) {
		h := http.Header{}
		h.Set("Retry-After-Ms", ms)
		h.Set("Retry-After", after)
		if n < 0 {
			n = -n
		}
		if got := retryWait(h, n%100, now); got <= 0 || got > 60*time.Second {
			t.Fatalf("retryWait(%q, %q, %d) = %v, want within (0, 60 s]", ms, after, n, got)
		}
	})
}
