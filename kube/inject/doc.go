// Package inject adds the inferrail sidecar to Kubernetes pod templates that
// run an inference engine (vLLM, SGLang or llama.cpp's llama-server), the
// way `linkerd inject` and Istio's injector add theirs. One code path builds
// the sidecar for both users: `inferrail inject` (YAML in, YAML out, comments
// kept; yaml.go) and the mutating admission webhook (a JSON patch of an
// admitted pod; patch.go).
//
//   - options.go: Options (image, ports, gossip seeds and key Secret,
//     resources) with defaults and Validate.
//   - engine.go: finds the engine container and reads its port, KV-events
//     endpoints, data-parallel size, block size and served model from its
//     command line; llamacpp.go: the same for llama-server, from its
//     command line, its environment and the llama.cpp server images.
//   - sidecar.go: the sidecar container, the gossip-key volume and the
//     injected annotation.
//   - plan.go: Plan decides, for one pod spec, to inject, to skip (already
//     injected, not an engine pod) or to refuse (and why).
//   - yaml.go, kinds.go: multi-document YAML through go.yaml.in/yaml/v3 nodes,
//     for Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob,
//     LeaderWorkerSet and List.
//   - patch.go: the RFC 6902 JSON patch the webhook returns.
package inject
