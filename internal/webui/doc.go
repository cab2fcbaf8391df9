// Package webui is the web UI every inferrail node serves on its admin port
// at /ui/: one embedded page (plain HTML, CSS and JavaScript, no build step)
// that shows what the node knows, read from the node's own admin endpoints:
// the fleet and its health, load, KV usage, cached blocks and summary age
// (GET /v1/replicas on a balancer, GET /v1/gossip/state everywhere), the
// gossip members from this node's view (GET /v1/gossip/members), hit rate
// and time to first token over the last minutes (GET /debug/series, a ring
// of per-second samples this package keeps), the latest routing decisions
// (a balancer's GET /debug/decisions) and an explain form (a balancer's
// POST /v1/explain). docs/ui.md shows it.
package webui
