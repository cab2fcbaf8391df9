// Package staleconn retries, once and on a fresh connection, an HTTP/1.1
// request whose pooled keep-alive connection failed before a single response
// byte arrived.
//
// Servers close idle keep-alive connections on their own schedule without
// telling the client (llama.cpp's HTTP server after 5 s idle; see
// docs/engines.md), so a request written just as the server closes its
// connection meets a dead connection and reads EOF. Go's transport sends
// such a request again only for idempotent methods: a completions POST
// would fail although the server never saw it.
//
// The retry is limited to what is safe to send twice: the connection was a
// reused one (a fresh connection that fails is a real failure), no byte of a
// response came back, the caller is still waiting, and the body can be sent
// again (there is none, or Request.GetBody rebuilds it).
package staleconn

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// Transport is an http.RoundTripper that sends through Pooled and, when the
// conditions of the package doc hold, once more through Fresh.
type Transport struct {
	// Pooled is the keep-alive transport requests go through first.
	Pooled http.RoundTripper
	// Fresh sends the retry; it must open a new connection for every
	// request (http.Transport with DisableKeepAlives).
	Fresh http.RoundTripper
	// OnRetry, when set, is called before each retry.
	OnRetry func()
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	var reused, firstByte atomic.Bool
	trace := &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { reused.Store(i.Reused) },
		GotFirstResponseByte: func() { firstByte.Store(true) },
	}
	resp, err := t.Pooled.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
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
	if t.OnRetry != nil {
		t.OnRetry()
	}
	return t.Fresh.RoundTrip(again)
}
