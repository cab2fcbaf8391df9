// Package gateway holds the balancer's gateway features: API keys
// (Keyring), request and token rate limits (Limiter over a Store: in memory,
// or shared through Redis with atomic server-side scripts), the counting of
// completion tokens in responses (Meter) and CORS. The balancer's handler
// composes them; docs/gateway.md describes each with a working config.
//
// The request path reads an immutable Gate (keys, quotas, CORS) that the
// balancer swaps atomically on reload; the Limiter and its stores live
// across reloads so bucket levels survive them.
package gateway
