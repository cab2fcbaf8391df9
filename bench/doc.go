// Package bench is the harness behind `inferrail bench`: it drives an
// OpenAI-compatible endpoint (a balancer, a sidecar, an engine or nginx in
// front of engines) open-loop and measures what a user of an LLM fleet feels.
//
// Arrivals are scheduled in advance (a seeded Poisson process, or a trace's own
// timestamps), and every latency is counted from the scheduled send time, not
// from the moment the request actually left: a server that falls behind cannot
// hide its queue by slowing the client down (coordinated omission). Turns of a
// conversation (W2) or an agent loop (W3) depend on the previous answer, so a
// session's next turn is scheduled at the previous turn's end plus its think
// time.
//
// Workloads: W1 (shared system prompts under cache pressure), W2 (multi-turn
// chat with think time), W3 (agent loops with a growing context), W6 (nothing
// shared), ladder (llm-d's shared-prefix synthetic: fixed questions over
// shared system prompts, sent in a shuffled cycle) and replay of the Mooncake
// trace format, whose 512-token hash ids
// expand deterministically into text that the builtin:sim tokenizer cuts into
// exactly 512 tokens, so the engines and the router see the trace's prefix
// structure.
//
// A Result holds per-request records and a Summary: TTFT, TPOT, inter-token
// latency, end-to-end latency, throughput, goodput at an SLO, prefix hit rate
// from usage and from the engines' counters, prediction accuracy (the
// balancer's x-inferrail-cached-tokens against the engine's cached tokens),
// send lag and per-replica share. Bounds computes the hit-rate ceilings of the
// same request sequence (infinite cache, pooled LRU, pooled Belady, and an
// offline replay of an exact-state router as a reference) so hit rates can be
// shown as fractions of them.
//
// Compare runs a plan on fresh, cold fleets: optionally a capacity search
// first (CapacitySearch: a policy at stepped rates; the highest within the
// SLO becomes the base load, recorded in every Result), every policy at the
// base load,
// nginx baselines, the exact-state oracle (a policy on a fleet with
// devfleet.Config.ExactState, kind KindOracle), a load sweep, a balancer
// sweep and a replicas sweep (kind KindReplicas, for "replicas needed to stay
// within the SLO"); BestPeerToken in a sweep's policies stands for the peer
// policy with the best base run. Each result's RunInfo says which run it
// was; WritePlan prints the plan and its time budget without running it.
package bench
