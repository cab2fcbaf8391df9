// Package perfmodel holds the default constants of the per-step engine
// latency model of docs/perf-model.md, once: the simulator's LatencyModel
// (internal/enginesim) and the balancer's cost model (balancer/route
// CostConfig) are both built from them, so the router's estimate and the
// simulated engine cannot drift apart. The balancer does not import the
// simulator; both import this package, which has no dependencies.
package perfmodel

import "time"

// Constants are one deployment's latency-model constants and the engine
// defaults they assume (docs/perf-model.md#the-step-model):
//
//	t_step = T0 + max(W_floor, T_tok / R_lin) + A_att * Σ n_i (c_i + n_i/2) + A_kv * Σ ctx_j
type Constants struct {
	// StepOverhead is T0, the fixed cost of an engine step.
	StepOverhead time.Duration
	// WeightFloor is W_floor, the weight-read floor of a step with few tokens.
	WeightFloor time.Duration
	// LinearTokPerSec is R_lin, the GEMM throughput once a step is
	// compute-bound.
	LinearTokPerSec float64
	// AttentionPerPairNS is A_att in nanoseconds per causal (query, key) pair.
	AttentionPerPairNS float64
	// KVReadPerTokenNS is A_kv in nanoseconds per context token per decode
	// step.
	KVReadPerTokenNS float64
	// RequestOverhead is T_req, the API and tokenization time outside the
	// engine.
	RequestOverhead time.Duration
	// StepTokenBudget is the engine's max_num_batched_tokens.
	StepTokenBudget int
	// MaxNumSeqs caps the running batch (vLLM max_num_seqs).
	MaxNumSeqs int
	// BlockSize is the KV block size in tokens.
	BlockSize int
	// NumGPUBlocks is the KV cache's capacity in blocks.
	NumGPUBlocks int
}

// Llama8BH100 returns the constants for Llama-3.1-8B on one H100 with vLLM V1
// defaults (docs/perf-model.md#defaults-llama-31-8b-on-one-h100).
func Llama8BH100() Constants {
	return Constants{
		StepOverhead:       time.Millisecond,
		WeightFloor:        6300 * time.Microsecond,
		LinearTokPerSec:    47000,
		AttentionPerPairNS: 1.31,
		KVReadPerTokenNS:   60,
		RequestOverhead:    10 * time.Millisecond,
		StepTokenBudget:    8192,
		MaxNumSeqs:         1024,
		BlockSize:          16,
		NumGPUBlocks:       27500,
	}
}
