// Package enginesim is the simulator behind `inferrail sim`: a CPU engine
// that clients, sidecars and balancers cannot tell from vLLM except by the
// text it generates.
//
// The engine core (Engine) runs vLLM V1's scheduler step by step on a
// virtual timeline: running sequences get their decode token first, waiting
// and partially prefilled sequences fill the rest of the token budget
// (chunked prefill), and KV runs out into preemption by recomputation. Its
// block pool is vLLM's BlockPool: a free queue in LRU order, blocks freed
// tail first, cached blocks evicted when the free queue hands them out
// again, with BlockStored, BlockRemoved and AllBlocksCleared events in
// vLLM's order and granularity. Each step lasts LatencyModel.StepTime (the
// cost model of docs/design.md §8); the loop sleeps until the step's virtual end,
// so timer overshoot never accumulates, and it runs unchanged inside
// testing/synctest bubbles. Metrics exposes vLLM's (or SGLang's) Prometheus
// families with their names, labels and buckets.
//
// The contract between the core, the HTTP front end and the KV-event
// publisher is in api.go.
package enginesim
