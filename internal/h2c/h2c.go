// Package h2c holds the HTTP protocol sets inferrail's plain-text ports use:
// HTTP/1.1 and HTTP/2 with prior knowledge (h2c, RFC 9113 section 3.3) on
// one port, through net/http's Protocols, so that no upgrade dance or
// golang.org/x/net/http2/h2c wrapper is needed.
package h2c

import "net/http"

// ServerProtocols returns the protocols of a plain-text server that accepts
// both HTTP/1.1 and h2c: the balancer's client port, the sidecar's data path
// and the simulator's API. Each call returns a new value.
func ServerProtocols() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return &p
}

// ClientProtocols returns the protocols of a client that speaks only h2c to
// a plain-text server (prior knowledge: no HTTP/1.1 fallback). Each call
// returns a new value.
func ClientProtocols() *http.Protocols {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &p
}
