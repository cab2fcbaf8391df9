// Package llamacpp is the engine adapter for llama.cpp's llama-server. The
// server publishes no KV-cache events: the sidecar keeps the approximate
// block set built from its own data path, sized from what this package reads
// off the server:
//
//   - the Prometheus page (/metrics, served with --metrics): the
//     llamacpp:requests_processing and llamacpp:requests_deferred gauges and
//     the prompt, cached-prompt and generated token counters (Names);
//   - /slots: each slot's state and context size, from which the KV usage is
//     estimated (ParseSlots, Usage);
//   - /props: the slot count and each slot's context, the capacity
//     (ParseProps, CapacityTokens).
//
// The names and shapes are those of tools/server/server-task.cpp
// (server_task_result_metrics::to_metrics) and tools/server/server-context.cpp
// (server_slot::to_json, get_res_props) in llama.cpp; docs/engines.md
// describes them and the server's quirks.
package llamacpp
