// Package respcache answers repeated requests without an engine: an exact
// cache keyed on the canonical form of a request's answer-changing fields,
// and a semantic cache that finds a stored question close enough to a new
// one in an embedding space. Both are scoped per tenant (API key) and model,
// so one tenant never reads another's answers.
//
// Entries live in memory (a byte-budget LRU with a TTL) or, shared between
// balancers, in Redis with their TTL. The semantic cache's vectors are kept
// in an in-process exact cosine index; in shared mode they are also stored
// in Redis, and every balancer keeps its index in step from a Redis stream
// of inserts and purges plus a scan on start (no Redis vector module).
//
// A streamed response is captured as it passes and stored only when it
// completed cleanly; a hit replays the exact bytes first captured, with the
// same framing. docs/gateway.md#response-caches documents the behaviour and
// the config.
package respcache
