// Package balancer is `inferrail balancer`: the stateless, KV-cache-aware
// front of an inference fleet (docs/design.md §5–§6).
//
// A Balancer joins the gossip (package gossip) to learn sidecars and their
// load and prefix summaries, keeps the fleet of replicas (package
// balancer/fleet, static ones from the config too), and serves the
// OpenAI-compatible client API over HTTP/1.1 and h2c. Per request
// (handler.go, forward.go): the body is read once with a size cap and a
// deadline; only "model" is rewritten (aliases); the prompt is tokenized on
// the bounded pool (internal/tokenize) and cut into chained block hashes
// (internal/kvblock); the model's policy (balancer/route) predicts the cached
// tokens on each candidate from its summary and the balancer's overlay and
// picks one; the request is counted against the replica's caps and proxied
// (balancer/proxy), retrying elsewhere only before the first byte. Every
// response carries x-request-id, x-inferrail-replica,
// x-inferrail-prompt-tokens and x-inferrail-cached-tokens (predicted). A
// model without a tokenizer is routed on its requests' text prefix identity
// instead (textprefix.go; the counts are then estimates, and
// x-inferrail-tokens-estimated says so). Replicas also come from DNS
// (balancer/discovery, discovery.dns).
//
// With epp.listen set (--epp), it is also a Gateway API InferencePool's
// endpoint picker (epp*.go over package balancer/epp, docs/epp.md): a
// gateway asks over Envoy ext_proc where a request goes, and the same
// prepare and decide steps as the proxy path (forward.go) answer, with a
// lease on the pick that the gateway's reports settle.
//
// The admin port (never the client port) serves /metrics, /healthz and
// /v1/gossip/*. Config (config.go) is one YAML file decoded strictly over
// the defaults; `inferrail check` validates it.
package balancer
