// Package route chooses the replica for one request: the balancer's routing
// policies and the cost model behind the default one (docs/design.md §5).
//
// The fleet builds a []Candidate per immutable snapshot; the request path
// calls Policy.Pick with the request's block hashes, that slice and a reused
// Scratch. Pick first filters (serves the model, healthy, below its caps),
// then predicts the cached tokens per candidate (the larger of the gossiped
// bloom summary's longest prefix and the balancer's own Overlay of recent
// placements), scores and picks. Policies are pure functions of their inputs
// plus a seeded, lock-free RNG or atomic counter: no I/O and no locks, and the
// cache-aware ones allocate nothing per decision.
//
// Policies, chosen per model by Config.Policy:
//
//   - round_robin, random, least_request, p2c: the cache-blind baselines.
//   - prefix_hash: rendezvous hashing on the hash of the first
//     Config.PrefixBlocks blocks, with bounded load (Mirrokni et al.): a
//     replica whose load would exceed LoadFactor × the mean (and at least
//     MinLoadBound requests) is passed over for the next in the prefix's
//     rendezvous order. Balancers agree without shared state.
//   - kv_aware: a weighted blend, in [0,1], of the predicted hit ratio, the
//     relative load and the free KV cache.
//   - cost_model (the default): the lowest estimated time to first token,
//     from the uncached prefill tokens queued ahead, decode interference and
//     the prefill of this request's uncached tokens given its cached ones,
//     with the per-step latency model of docs/design.md §8; bounded-load spill;
//     a prefix whose warm replica is saturated is replicated to the next best.
//
// Peer baselines, for comparisons in bench compare and not production policies
// (Baselines; docs/baselines.md): sglang_cache_aware (the SGLang router's
// cache_aware policy over its own approximate prefix tree), dynamo_kv (NVIDIA
// Dynamo's KV router cost) and llm_d (llm-d's default scorers and weights).
//
// Staleness (docs/design.md §4) is judged once, outside route: a load report
// the fleet marked stale (Load.Stale: older than the gossip's load_max_age)
// is ignored and the balancer's own counters are used; a prefix summary the
// gossip marked stale (Candidate.SummaryStale: not confirmed within
// summary_max_age) is ignored and the prefix's prefix_hash owner is assumed
// to hold the first blocks.
//
// See docs/routing.md for the reasoning and docs/benchmarks-route.md for
// decision times.
package route
