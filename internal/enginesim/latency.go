package enginesim

import (
	"fmt"
	"math"
	"time"

	"github.com/inferrail/inferrail/internal/perfmodel"
)

// LatencyModel is the per-step cost model of docs/design.md §8:
//
//	t_step = T0 + max(W_floor, T_tok / R_lin) + A_att * Σ n_i (c_i + n_i/2) + A_kv * Σ ctx_j
//
// where n_i are the new tokens of prefill chunk i, c_i the tokens of that
// request already in KV (cached prefix and earlier chunks), T_tok every token
// of the step, and ctx_j the context length of decoding request j. The zero
// value is not useful; start from DefaultLatencyModel.
type LatencyModel struct {
	// StepOverhead is T0, the fixed cost of a step (scheduler, sampler, launch).
	StepOverhead time.Duration
	// WeightFloor is W_floor, the weight-read floor of a step with few tokens.
	WeightFloor time.Duration
	// LinearTokPerSec is R_lin, the GEMM throughput in tokens per second once
	// a step is compute-bound.
	LinearTokPerSec float64
	// AttentionPerPairNS is A_att in nanoseconds per causal (query, key) pair.
	AttentionPerPairNS float64
	// KVReadPerTokenNS is A_kv in nanoseconds per context token per decode step
	// (0.060 µs = 60 ns by default).
	KVReadPerTokenNS float64
	// RequestOverhead is T_req, the API and tokenization time before a request
	// can be scheduled (counted from Request.Arrival).
	RequestOverhead time.Duration
}

// PrefillChunk is one request's prefill work in a step: New tokens computed
// now, with Cached tokens of the same request already in KV (its cached
// prefix plus earlier chunks).
type PrefillChunk struct {
	New, Cached int
}

// DefaultLatencyModel returns the Llama-3.1-8B on one H100 constants of
// docs/perf-model.md (internal/perfmodel, shared with the balancer's cost
// model).
func DefaultLatencyModel() LatencyModel {
	d := perfmodel.Llama8BH100()
	return LatencyModel{
		StepOverhead:       d.StepOverhead,
		WeightFloor:        d.WeightFloor,
		LinearTokPerSec:    d.LinearTokPerSec,
		AttentionPerPairNS: d.AttentionPerPairNS,
		KVReadPerTokenNS:   d.KVReadPerTokenNS,
		RequestOverhead:    d.RequestOverhead,
	}
}

// validate appends one message per bad field to errs, prefixed with path.
func (m LatencyModel) validate(path string, errs []error) []error {
	if m.StepOverhead < 0 {
		errs = append(errs, fmt.Errorf("%s.step_overhead must be >= 0, got %v", path, m.StepOverhead))
	}
	if m.WeightFloor < 0 {
		errs = append(errs, fmt.Errorf("%s.weight_floor must be >= 0, got %v", path, m.WeightFloor))
	}
	if !(m.LinearTokPerSec > 0) || math.IsInf(m.LinearTokPerSec, 0) {
		errs = append(errs, fmt.Errorf("%s.linear_tok_per_sec must be > 0 and finite, got %v", path, m.LinearTokPerSec))
	}
	if !(m.AttentionPerPairNS >= 0) || math.IsInf(m.AttentionPerPairNS, 0) {
		errs = append(errs, fmt.Errorf("%s.attention_per_pair_ns must be >= 0 and finite, got %v", path, m.AttentionPerPairNS))
	}
	if !(m.KVReadPerTokenNS >= 0) || math.IsInf(m.KVReadPerTokenNS, 0) {
		errs = append(errs, fmt.Errorf("%s.kv_read_per_token_ns must be >= 0 and finite, got %v", path, m.KVReadPerTokenNS))
	}
	if m.RequestOverhead < 0 {
		errs = append(errs, fmt.Errorf("%s.request_overhead must be >= 0, got %v", path, m.RequestOverhead))
	}
	return errs
}

// StepTime returns the duration of one step that computes prefills and
// decodes (the context length of each decoding request, its new token
// included). It is a pure function; an empty step costs T0 + W_floor.
func (m LatencyModel) StepTime(prefills []PrefillChunk, decodeContexts []int) time.Duration {
	tokens := len(decodeContexts)
	var pairs float64
	for _, p := range prefills {
		tokens += p.New
		n := float64(p.New)
		pairs += n * (float64(p.Cached) + n/2)
	}
	var ctx float64
	for _, c := range decodeContexts {
		ctx += float64(c)
	}
	return m.stepTime(tokens, pairs, ctx)
}

// stepTime is StepTime over precomputed sums: tokens in the step, attention
// pairs of the prefill chunks and total decode context.
func (m LatencyModel) stepTime(tokens int, pairs, decodeCtx float64) time.Duration {
	lin := float64(tokens) / m.LinearTokPerSec * 1e9
	if floor := float64(m.WeightFloor); lin < floor {
		lin = floor
	}
	ns := float64(m.StepOverhead) + lin + m.AttentionPerPairNS*pairs + m.KVReadPerTokenNS*decodeCtx
	return time.Duration(math.Round(ns))
}

// IdleTTFT returns the time to first token of a request alone on an idle
// engine: RequestOverhead plus the steps that prefill promptLen-cachedLen
// tokens in chunks of at most budget tokens. cachedLen is clamped to
// [0, promptLen-1] because the last prompt token is always computed; the
// engine serves only whole blocks from cache, so pass a block-aligned value
// to match it.
func (m LatencyModel) IdleTTFT(promptLen, cachedLen, budget int) time.Duration {
	if promptLen <= 0 || budget <= 0 {
		return m.RequestOverhead
	}
	cachedLen = max(0, min(cachedLen, promptLen-1))
	t := m.RequestOverhead
	done := cachedLen
	for done < promptLen {
		n := min(budget, promptLen-done)
		t += m.StepTime([]PrefillChunk{{New: n, Cached: done}}, nil)
		done += n
	}
	return t
}
