package sidecar

import "sync/atomic"

// DataPathCounts are the exact counts the data path keeps of the work it has
// handed to the engine.
type DataPathCounts struct {
	// InFlight is the number of requests between arrival and the end of
	// their response body.
	InFlight int64 `json:"in_flight"`
	// WaitingFirstByte is the number of requests forwarded (or being read)
	// whose response headers have not come back yet: queued or prefilling
	// in the engine.
	WaitingFirstByte int64 `json:"waiting_first_byte"`
	// PromptTokens is the sum of the prompt tokens of the requests in
	// flight (exact when the prompt was tokenized, else estimated; see
	// docs/sidecar.md).
	PromptTokens int64 `json:"prompt_tokens"`
	// WaitingPromptTokens is the part of PromptTokens whose requests wait
	// for their first byte: prefill work queued or running in the engine.
	WaitingPromptTokens int64 `json:"waiting_prompt_tokens"`
	// WaitingPrefillTokens is the part of WaitingPromptTokens the engine
	// has to compute: each waiting prompt's tokens past the prefix the
	// sidecar's block set held when the request arrived (at least the last
	// token, which the engine always computes). Balancers read it as the
	// prefill work queued ahead of a new request.
	WaitingPrefillTokens int64 `json:"waiting_prefill_tokens"`
}

// inflight holds the live counts; every field is updated atomically so the
// request path takes no lock.
type inflight struct {
	inFlight, waiting, promptTokens, waitingTokens, waitingPrefill atomic.Int64
}

// Counts returns the current counts.
func (f *inflight) Counts() DataPathCounts {
	return DataPathCounts{
		InFlight:             f.inFlight.Load(),
		WaitingFirstByte:     f.waiting.Load(),
		PromptTokens:         f.promptTokens.Load(),
		WaitingPromptTokens:  f.waitingTokens.Load(),
		WaitingPrefillTokens: f.waitingPrefill.Load(),
	}
}

// firstByteLatch decrements the waiting count exactly once per request, on
// the first of: response headers received, an error, or the end of the
// request.
type firstByteLatch struct {
	done    atomic.Bool
	f       *inflight
	tokens  atomic.Int64 // prompt tokens counted as waiting
	prefill atomic.Int64 // of which uncached
}

func (l *firstByteLatch) release() {
	if l.done.CompareAndSwap(false, true) {
		l.f.waiting.Add(-1)
		l.f.waitingTokens.Add(-l.tokens.Load())
		l.f.waitingPrefill.Add(-l.prefill.Load())
	}
}

// addTokens counts n prompt tokens, prefill of them uncached, as waiting
// until release.
func (l *firstByteLatch) addTokens(n, prefill int64) {
	l.tokens.Store(n)
	l.prefill.Store(prefill)
	l.f.waitingTokens.Add(n)
	l.f.waitingPrefill.Add(prefill)
}
