package enginesim

import (
	"net/http"
	"time"

	"github.com/inferrail/inferrail/internal/wallclock"
)

// FinishedRequest is one finished request as the engine saw it: its
// timings from the front end's receipt (Request.Arrival), which leave out
// everything between the client and the engine (the load generator, the
// balancer, the sidecar and their machine), and what the engine did with it.
type FinishedRequest struct {
	// ID is the engine request id (Request.ID): the front end's base id
	// (the client's X-Request-Id when it sent one) and a random suffix after
	// the last '-'.
	ID string `json:"id"`
	// Arrival is the front end's receipt by the machine's wall clock, so a
	// client on the same machine can split its own latency into the way to
	// the engine, the engine's TTFT and the way back.
	Arrival      time.Time `json:"arrival"`
	PromptTokens int       `json:"prompt_tokens"`
	// CachedTokens is the prefix hit at the first admission.
	CachedTokens int `json:"cached_tokens"`
	OutputTokens int `json:"output_tokens"`
	// Preemptions is how often the engine preempted the request for want
	// of KV memory.
	Preemptions  int    `json:"preemptions"`
	FinishReason string `json:"finish_reason"`
	// Queue is the wait from readiness to the first admission, TTFT the
	// time from the arrival to the first token (both 0 when the request
	// ended without one), E2E the time from the arrival to the end.
	Queue time.Duration `json:"queue_ns"`
	TTFT  time.Duration `json:"ttft_ns"`
	E2E   time.Duration `json:"e2e_ns"`
}

// requestLogSize is how many finished requests an engine keeps: a bench
// run's share of one replica several times over (W6 at 1.5× of capacity
// sends about 2,000 a replica in a run).
const requestLogSize = 1 << 16

// requestLog holds the last requestLogSize finished requests in a ring.
// Its owner's lock guards it.
type requestLog struct {
	buf  []FinishedRequest
	next int // where the next one goes once buf is full
}

func (l *requestLog) add(r FinishedRequest) {
	if len(l.buf) < requestLogSize {
		l.buf = append(l.buf, r)
		return
	}
	l.buf[l.next] = r
	l.next = (l.next + 1) % requestLogSize
}

// list returns a copy, oldest first.
func (l *requestLog) list() []FinishedRequest {
	out := make([]FinishedRequest, 0, len(l.buf))
	out = append(out, l.buf[l.next:]...)
	return append(out, l.buf[:l.next]...)
}

// record adds s, which finished at t, to the log. The caller holds e.mu.
func (e *Engine) record(s *seq, reason string, t time.Time) {
	r := FinishedRequest{
		ID:           s.req.ID,
		Arrival:      s.arrival, // monotonic here; FinishedRequests puts it on the wall clock
		PromptTokens: s.promptLen,
		CachedTokens: max(s.cachedTokens, 0),
		OutputTokens: s.numOutput,
		Preemptions:  s.preemptions,
		FinishReason: reason,
		E2E:          t.Sub(s.arrival),
	}
	if !s.firstToken.IsZero() {
		r.Queue = s.queueTime()
		r.TTFT = s.firstToken.Sub(s.arrival)
	}
	e.finishedLog.add(r)
}

// FinishedRequests returns the last finished requests, oldest first (at
// most requestLogSize), their arrivals on the wall clock: comparable with
// another process's (wallclock.Of, read once for all of them, outside the
// engine's lock).
func (e *Engine) FinishedRequests() []FinishedRequest {
	e.mu.Lock()
	out := e.finishedLog.list()
	e.mu.Unlock()
	ref := time.Now()
	wall := wallclock.Of(ref)
	for i := range out {
		if a := out[i].Arrival; a.Round(0) != a { // a monotonic reading to place
			out[i].Arrival = wall.Add(a.Sub(ref))
		}
	}
	return out
}

// handleRequests serves GET /inferrail/debug/requests: every rank's last
// finished requests with the engine's own timings, which a benchmark joins
// with its client-side records by request id.
func (s *frontEnd) handleRequests(w http.ResponseWriter, _ *http.Request) {
	type rankRequests struct {
		Rank     int               `json:"rank"`
		Requests []FinishedRequest `json:"requests"`
	}
	out := []rankRequests{}
	for _, rk := range s.ranks {
		rr := rankRequests{Rank: rk.rank, Requests: []FinishedRequest{}}
		if rk.finished != nil {
			rr.Requests = rk.finished()
		}
		out = append(out, rr)
	}
	writeJSON(w, http.StatusOK, map[string]any{"ranks": out})
}
