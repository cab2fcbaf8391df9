// Package gossip is inferrail's membership and dissemination layer, built on
// hashicorp/memberlist.
//
// Every process joins the same gossip cluster with a Role: sidecars (one per
// engine) publish load and a prefix summary of the KV blocks their engine
// holds; balancers consume them to route; observers only watch. Node metadata
// (Meta: role, models, engine kind, block size, data and admin addresses,
// version, summary epoch) travels in memberlist's node meta, within its 512
// bytes.
//
// Dissemination (docs/adr/0002-gossip-dissemination.md has the measured
// reasons):
//
//   - Announcements (load, summary epoch and sequence, send time) go every
//     LoadInterval (100 ms) from each sidecar directly to every balancer and
//     observer as one best-effort (UDP) user message of about 60 bytes.
//   - Summary deltas (the 32-bit keys of blocks added within the current
//     epoch, cut to fit a packet) go on the same best-effort path to every
//     balancer.
//   - Summary snapshots (a whole bloom filter, ~24 KB for 20,000 blocks at 1%)
//     go on the reliable (TCP) user-message path: to every balancer when a new
//     epoch starts, and to one balancer when it asks for a resync.
//   - A balancer holds deltas that arrive ahead of its view (memberlist hands
//     user messages over newest first, and UDP reorders); a gap still open
//     after ResyncAfter, or an announcement ahead of the view for that long,
//     makes it send a small resync request, and the sidecar answers with a
//     snapshot, at most once per ResyncInterval per balancer.
//
// Every message starts with a type byte and a version byte, then the sender's
// node name; receivers drop messages from names that are not alive members
// with the right role. With SecretKey set, memberlist encrypts every packet
// and stream, so a node with another key can neither join nor inject.
//
// The receiving side is Peers: an immutable PeersView of members
// (read lock-free through an atomic pointer) whose load and summary are
// updated atomically in place, each with an age; load older than LoadMaxAge
// and summaries not confirmed within SummaryMaxAge are reported stale, and a
// member that fails or leaves has its summary dropped at once.
//
// Handler serves GET /v1/gossip/members and GET /v1/gossip/state for the admin
// port; `inferrail members` prints them. Package gossiptest runs N nodes in
// one process over an in-memory transport for tests.
package gossip
