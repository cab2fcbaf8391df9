package vllm

import (
	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/inferrail/inferrail/sidecar/engine/internal/msgpackread"
)

// Names is vLLM's table of metric names (newest name first where renamed).
var Names = engine.MetricNames{
	Kind:      engine.KindVLLM,
	Prefix:    "vllm:",
	RankLabel: "engine",
	Running:   []string{"vllm:num_requests_running"},
	Waiting:   []string{"vllm:num_requests_waiting"},
	KVUsage:   []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
	PromptTokens: []string{
		"vllm:prompt_tokens_total", "vllm:prompt_tokens",
	},
	GenerationTokens: []string{
		"vllm:generation_tokens_total", "vllm:generation_tokens",
	},
	PrefixQueries: []string{
		"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries",
		"vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries",
	},
	PrefixHits: []string{
		"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits",
		"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits",
	},
	Preemptions: []string{"vllm:num_preemptions_total", "vllm:num_preemptions"},
	CacheInfo:   "vllm:cache_config_info",
}

// DecodeBatch decodes a vLLM KV-event batch: the outer array [ts, events] (v0.9.0)
// or [ts, events, data_parallel_rank] (v0.9.1+), or a map defensively; events
// as arrays by position (v0.9.0's 5 fields up to v0.22's 11, missing or extra
// trailing fields tolerated) or as tagged maps by key (v0.24+, unknown keys
// ignored). Block hashes are normalised to uint64 (docs/engines.md#vllm-block-hashes-on-the-wire). Unknown
// event tags are skipped.
func DecodeBatch(payload []byte) (engine.Batch, error) {
	return msgpackread.DecodeBatch(payload)
}
