// Package sidecar is the process that runs beside each inference engine
// (vLLM, SGLang or `inferrail sim`). It fronts the engine's OpenAI API on an
// h2c + HTTP/1.1 data path and counts the work in flight exactly, scrapes the
// engine's Prometheus page every 100 ms, follows the engine's KV-cache events
// into an exact block set (or, when the engine publishes none, an approximate
// set built from the prompts that passed through the data path), builds bloom
// summaries over that set and gossips load and summaries to the balancers.
//
// The moving parts, each in its own file:
//
//   - config.go, yaml.go: Config, defaults, strict YAML, environment, Validate.
//   - proxy.go, inflight.go: the data-path reverse proxy and its exact counts.
//   - scrape.go: the metrics scrape loop and the load report.
//   - approx.go, prompt.go: the approximate block set from data-path prompts.
//   - exact.go, exact_zmq.go: KV events (zmqsub) into the exact block set
//     (blockset) and its change feed.
//   - events.go, summary.go: the state machine choosing the summary's source
//     (exact or approximate) and the feed into the summary builder.
//   - admin.go: /metrics, /healthz, /v1/gossip/*, /v1/summary, /v1/load.
//   - sidecar.go, state.go, gossip.go: New and Run, which compose everything
//     under one errgroup and shut down in order (leave the gossip, then
//     drain); the control loop; the gossip node adapter.
package sidecar
