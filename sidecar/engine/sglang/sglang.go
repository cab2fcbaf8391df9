package sglang

import (
	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/inferrail/inferrail/sidecar/engine/internal/msgpackread"
)

// Names is SGLang's table of metric names. Scheduler gauges carry tp_rank,
// pp_rank and moe_ep_rank labels; series of non-zero ranks repeat rank 0's
// values and are ignored. NumGPUBlocks is max_total_num_tokens / page_size.
var Names = engine.MetricNames{
	Kind:             engine.KindSGLang,
	Prefix:           "sglang:",
	RankLabel:        "dp_rank",
	ReplicaLabels:    []string{"tp_rank", "pp_rank", "moe_ep_rank"},
	Running:          []string{"sglang:num_running_reqs"},
	Waiting:          []string{"sglang:num_queue_reqs"},
	KVUsage:          []string{"sglang:token_usage"},
	PromptTokens:     []string{"sglang:prompt_tokens_total", "sglang:prompt_tokens"},
	GenerationTokens: []string{"sglang:generation_tokens_total", "sglang:generation_tokens"},
	// SGLang counts no prefix queries: every prompt token is looked up.
	PrefixQueries:  []string{"sglang:prompt_tokens_total", "sglang:prompt_tokens"},
	PrefixHits:     []string{"sglang:cached_tokens_total", "sglang:cached_tokens"},
	Preemptions:    []string{"sglang:num_retracted_reqs"},
	BlockSizeGauge: "sglang:page_size",
	CapacityTokens: "sglang:max_total_num_tokens",
}

// DecodeBatch decodes an SGLang KV-event batch: [ts, events, attn_dp_rank] with
// array-encoded events BlockStored (7 elements), BlockStoredWithMetadata (8,
// the last a {cache_salt} map), BlockRemoved and AllBlocksCleared; CPU_PINNED
// is reported as engine.MediumCPU. Tagged-map events (proposed upstream) are
// accepted too.
func DecodeBatch(payload []byte) (engine.Batch, error) {
	return msgpackread.DecodeBatch(payload)
}
