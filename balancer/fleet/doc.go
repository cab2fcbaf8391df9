// Package fleet is the balancer's list of replicas: static ones from the
// config (engines reached directly over HTTP/1.1 or h2c) and the sidecars
// learned from the gossip (reached through their data address over h2c).
//
// Fleet publishes an immutable Snapshot per change through an atomic
// pointer, so the request path reads it without locks. A Replica outlives
// snapshots: its counters (route.Counters, updated atomically) and its health
// carry over when membership changes.
//
// Health (health.go): active probes of each replica's health path, and
// passive ejection after consecutive request failures with a doubling
// backoff, never ejecting more than a set share of a model's replicas. A
// replica that goes down (ejected, failed probes, or gone from the gossip)
// cancels its Down context, so a request still waiting for its first byte
// there can move to another replica.
//
// Caps (Replica.TryAcquire) are enforced with compare-and-swap on the
// counters, so concurrent requests never overshoot max_concurrency or
// max_pending.
package fleet
