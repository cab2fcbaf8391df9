// Package proxy sends one attempt of a client request to an upstream and
// streams the response back unbuffered.
//
// Proxy holds two pooled transports: HTTP/1.1 for engines reached directly,
// and HTTP/2 with prior knowledge (h2c) for sidecars. Send forwards the
// request body byte for byte with hop-by-hop headers removed and reports a
// failure to connect as a DialError, so the caller knows the request never
// reached the upstream; Retryable says whether an attempt may move to another
// replica (only before the first response byte). Stream copies the response
// headers (minus hop-by-hop ones) and body, flushing after every read so
// server-sent events go out as they come; a started stream is never replayed.
// The attempt's context cancels the upstream request, so a client that
// disconnects aborts it.
package proxy
