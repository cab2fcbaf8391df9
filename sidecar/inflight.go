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
}

// inflight holds the live counts; every field is updated atomically so the
// request path takes no lock.
type inflight struct {
	inFlight, waiting, promptTokens atomic.Int64
}

// Counts returns the current counts.
func (f *inflight) Counts() DataPathCounts {
	return DataPathCounts{
		InFlight:         f.inFlight.Load(),
		WaitingFirstByte: f.waiting.Load(),
		PromptTokens:     f.promptTokens.Load(),
	}
}

// firstByteLatch decrements the waiting count exactly once per request, on
// the first of: response headers received, an error, or the end of the
// request.
type firstByteLatch struct {
	done    atomic.Bool
	waiting *atomic.Int64
}

func (l *firstByteLatch) release() {
	if l.done.CompareAndSwap(false, true) {
		l.waiting.Add(-1)
	}
}
