package sidecar

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// staleConnRetry sends a request again, once and on a fresh connection, when
// the pooled keep-alive connection it went out on failed before a single
// response byte arrived. Engines close idle keep-alive connections on their
// own schedule without telling the client (llama.cpp's HTTP server after 5 s
// idle, and after 100 requests on one connection; docs/engines.md), so a
// request that is written just as the engine closes meets a dead connection.
// Go's transport retries only idempotent methods there; a completions POST
// would fail with EOF although the engine never saw it.
//
// The retry is limited to what is safe to send twice: the connection was a
// reused one (a fresh dial that fails is a real failure), no byte of a
// response came back, the client is still waiting, and the body can be sent
// again (it was read in full by the data path, or there is none).
type staleConnRetry struct {
	pooled http.RoundTripper
	// fresh dials a new connection for every request and keeps none.
	fresh   http.RoundTripper
	onRetry func() // may be nil
}

// newStaleConnRetry wraps pooled; fresh is a transport with keep-alives
// disabled.
func newStaleConnRetry(pooled, fresh http.RoundTripper, onRetry func()) *staleConnRetry {
	return &staleConnRetry{pooled: pooled, fresh: fresh, onRetry: onRetry}
}

// RoundTrip implements http.RoundTripper.
func (t *staleConnRetry) RoundTrip(r *http.Request) (*http.Response, error) {
	var reused, firstByte atomic.Bool
	trace := &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { reused.Store(i.Reused) },
		GotFirstResponseByte: func() { firstByte.Store(true) },
	}
	resp, err := t.pooled.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
	if err == nil || !reused.Load() || firstByte.Load() || r.Context().Err() != nil ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return resp, err
	}
	again := r.Clone(r.Context())
	switch {
	case r.Body == nil || r.Body == http.NoBody:
	case r.GetBody != nil:
		body, gerr := r.GetBody()
		if gerr != nil {
			return nil, err
		}
		again.Body = body
	default:
		return nil, err // a streamed body cannot be sent twice
	}
	if t.onRetry != nil {
		t.onRetry()
	}
	return t.fresh.RoundTrip(again)
}

// newFreshTransport returns a transport like the pooled one that opens a new
// connection for every request and closes it after.
func newFreshTransport(cfg ProxyConfig) *http.Transport {
	tr := newEngineTransport(cfg)
	tr.DisableKeepAlives = true
	return tr
}
