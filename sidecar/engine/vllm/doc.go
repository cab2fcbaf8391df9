// Package vllm is the engine adapter for vLLM: its KV-event payloads in every
// form shipped from v0.9.0 to main (array-encoded events before v0.24, tagged
// maps since; hashes as signed, unsigned or bytes) and its Prometheus metric
// names across versions, including the v0.9.2 renames
// (gpu_cache_usage_perc → kv_cache_usage_perc, gpu_prefix_cache_* →
// prefix_cache_*). See docs/engines.md#vllm.
package vllm
