package sidecar

import (
	"net/http"

	"github.com/inferrail/inferrail/internal/staleconn"
)

// newStaleConnRetry wraps the pooled engine transport so that a request whose
// kept-alive connection the engine closed before any response byte goes
// again on a fresh connection (internal/staleconn; llama.cpp closes idle
// connections after 5 s, docs/engines.md). fresh is a transport with
// keep-alives disabled; onRetry counts the retries.
func newStaleConnRetry(pooled, fresh http.RoundTripper, onRetry func()) http.RoundTripper {
	return &staleconn.Transport{Pooled: pooled, Fresh: fresh, OnRetry: onRetry}
}

// newFreshTransport returns a transport like the pooled one that opens a new
// connection for every request and closes it after.
func newFreshTransport(cfg ProxyConfig) *http.Transport {
	tr := newEngineTransport(cfg)
	tr.DisableKeepAlives = true
	return tr
}
