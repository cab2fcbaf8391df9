package route

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/inferrail/inferrail/internal/perfmodel"
)

// Policy names accepted in Config.Policy.
const (
	PolicyRoundRobin   = "round_robin"
	PolicyRandom       = "random"
	PolicyLeastRequest = "least_request"
	PolicyP2C          = "p2c"
	PolicyPrefixHash   = "prefix_hash"
	PolicyKVAware      = "kv_aware"
	PolicyCostModel    = "cost_model"
)

// Policies lists every policy name, the default last.
var Policies = []string{
	PolicyRoundRobin, PolicyRandom, PolicyLeastRequest, PolicyP2C,
	PolicyPrefixHash, PolicyKVAware, PolicyCostModel,
}

// Config is one model's routing configuration. Start from DefaultConfig;
// New validates it.
type Config struct {
	// Policy is the policy name (default cost_model).
	Policy string `yaml:"policy"`
	// Seed seeds the random, p2c and tie-breaking RNG.
	Seed uint64 `yaml:"seed"`
	// PrefixBlocks is how many leading blocks name a prefix for prefix_hash
	// placement (and the stale-summary fallback of the cache-aware policies).
	PrefixBlocks int `yaml:"prefix_blocks"`
	// LoadFactor is the bounded-load factor c: prefix_hash and cost_model
	// never place a request on a replica whose load (requests in flight)
	// would exceed c × the mean load of the eligible replicas, weighted.
	LoadFactor float64 `yaml:"load_factor"`
	// MinLoadBound is the smallest the bound ever is, in requests: an
	// engine batches many requests at once, so at low load the bound would
	// scatter a burst that shares a prefix for no gain (0: the pure bound).
	// cost_model bounds work instead (estimated delay, at least one full
	// engine step); see costModel.
	MinLoadBound int `yaml:"min_load_bound"`
	// TieMargin is the relative margin within which cost_model treats
	// scores as equal (at least one step overhead): the prefix's rendezvous
	// order then picks among them, so that balancers acting on one view
	// spread different prompts instead of all picking the same replica.
	TieMargin float64 `yaml:"tie_margin"`
	// SpreadMargin is the relative margin within which cost_model rotates
	// a prompt that no replica there holds any of (at least one step
	// overhead): the candidates whose scores are within it of the lowest
	// take such prompts in turn, so arrivals reach each replica evenly
	// spaced, which no choice by the replicas' current work gives (their
	// queues fall a whole batch at once). 0: no rotation, TieMargin's rule.
	SpreadMargin float64 `yaml:"spread_margin"`
	// ShedDelay sheds load (cost_model only): a request is never sent where
	// the work already there (queued prefill, decodes, the wait for KV
	// memory, as estimated and corrected by the replica's measured TTFT
	// ratio) would delay its first token by more than ShedDelay while
	// another eligible replica's would not, and is refused (ErrOverloaded:
	// 503 with Retry-After) when every one's would. Past capacity a fleet
	// that queues every request answers every one late; one that sheds the
	// excess answers the rest in time. Set it to the TTFT objective less a
	// typical prompt's own prefill. 0: never shed.
	ShedDelay time.Duration `yaml:"shed_delay"`
	// SLO is the service level the fleet is held to, which cost_model's
	// TPOT guard protects (SLOConfig; zero: no guard).
	SLO SLOConfig `yaml:"slo"`
	// KVAware weighs the kv_aware scorers.
	KVAware KVAwareConfig `yaml:"kv_aware"`
	// Cost holds the cost model's parameters.
	Cost CostConfig `yaml:"cost_model"`
	// Overlay configures the overlay of recent placements (kv_aware,
	// cost_model and the dynamo_kv and llm_d baselines).
	Overlay OverlayConfig `yaml:"overlay"`
	// Baselines holds the parameters of the peer baselines (Baselines),
	// which are comparisons for bench compare, not production policies.
	Baselines BaselinesConfig `yaml:"baselines"`
}

// SLOConfig is the service level objective of a model's requests: what
// goodput counts as good. With TPOT set, cost_model does not send a prompt
// where its prefill would push an answer this balancer is streaming there
// past TPOT while another candidate would not, and TTFT bounds what that
// may cost the prompt (docs/routing.md#the-tpot-guard).
type SLOConfig struct {
	// TTFT is the objective's largest time to first token: a guarded
	// prompt goes to another candidate only if that one's estimated TTFT
	// is within it, or within the best candidate's (0: any candidate under
	// the bounds).
	TTFT time.Duration `yaml:"ttft"`
	// TPOT is the objective's largest mean time per output token after the
	// first, over an answer's whole output (0: no guard).
	TPOT time.Duration `yaml:"tpot"`
}

// KVAwareConfig weighs the kv_aware policy's scorers; each scorer gives a
// value in [0,1] and the score is their weighted mean.
type KVAwareConfig struct {
	// PrefixWeight weighs the predicted hit ratio (cached / prompt blocks).
	PrefixWeight float64 `yaml:"prefix_weight"`
	// LoadWeight weighs the relative load: 1 for the least loaded eligible
	// replica, 0 for the most loaded.
	LoadWeight float64 `yaml:"load_weight"`
	// KVUsageWeight weighs the free KV cache (1 - usage; 0.5 when unknown).
	KVUsageWeight float64 `yaml:"kv_usage_weight"`
}

// CostConfig is the cost model: the per-step latency model of docs/design.md §8
// (the same formula as internal/enginesim LatencyModel.StepTime) plus what
// the router must assume about work it cannot see.
type CostConfig struct {
	// StepOverhead is T0, the fixed cost of an engine step.
	StepOverhead time.Duration `yaml:"step_overhead"`
	// WeightFloor is W_floor, the weight-read floor of a step.
	WeightFloor time.Duration `yaml:"weight_floor"`
	// LinearTokPerSec is R_lin, the GEMM throughput once compute-bound.
	LinearTokPerSec float64 `yaml:"linear_tok_per_sec"`
	// AttentionPerPairNS is A_att in nanoseconds per causal (query, key) pair.
	AttentionPerPairNS float64 `yaml:"attention_per_pair_ns"`
	// KVReadPerTokenNS is A_kv in nanoseconds per context token per decode step.
	KVReadPerTokenNS float64 `yaml:"kv_read_per_token_ns"`
	// RequestOverhead is T_req, the per-request API and tokenization time.
	RequestOverhead time.Duration `yaml:"request_overhead"`
	// StepTokenBudget is the engine's max_num_batched_tokens.
	StepTokenBudget int `yaml:"step_token_budget"`
	// DecodeContextTokens is the assumed mean context of a running
	// (decoding) request, for the decode-interference term.
	DecodeContextTokens int `yaml:"decode_context_tokens"`
	// QueuedPromptTokens is the assumed uncached prompt tokens of a queued
	// request when the replica does not report its waiting prefill tokens;
	// it also sizes the attention of queued prefills.
	QueuedPromptTokens int `yaml:"queued_prompt_tokens"`
	// ExpectedOutputTokens is the assumed output length of a request still
	// to come, for the KV memory the bound keeps free for decodes (load.go
	// kvFit, OutputReserve): every request in flight, decoding or not, may
	// still add about this many tokens. A request's own max_tokens lowers
	// its figure. 0: no reserve (the bound counts prompts only).
	ExpectedOutputTokens int `yaml:"expected_output_tokens"`
	// HotPrefixQueueWait is the estimated queue wait on the best replica
	// above which a prefix it holds counts as hot: the request goes to the
	// next best replica (if that is at most this much slower), which then
	// becomes a second home of the prefix. A request opening a conversation
	// goes so to a replica with far more free KV memory, within the same
	// allowance times the share of the model's conversations that have
	// later turns (docs/routing.md). 0 disables both.
	HotPrefixQueueWait time.Duration `yaml:"hot_prefix_queue_wait"`
	// MissPenalty charges, when choosing, each candidate this multiple of
	// the idle prefill time of the prompt tokens it does not hold, on top
	// of its estimated TTFT: a miss costs the fleet that prefill work and
	// the cache it evicts, which the request's own TTFT does not show.
	// Without it the greedy choice moves a prefix off its warm replica as
	// soon as the queue there equals a cold prefill, and under load the
	// prefixes chase each other around the fleet. 0 is the pure greedy rule.
	MissPenalty float64 `yaml:"miss_penalty"`
}

// OverlayConfig configures the overlay of the balancer's own recent
// placements.
type OverlayConfig struct {
	// TTL is how long a placement is remembered (0 disables the overlay
	// for block hashes).
	TTL time.Duration `yaml:"ttl"`
	// TextTTL is how long the placement of a text prefix identity (a model
	// without a tokenizer, Request.TextPrefix) is remembered, from its
	// latest placement: no summary holds such a prefix, so the overlay is
	// the only memory of where it went, and Settle does not shorten it (0
	// routes those requests cache-blind but for the prefix_hash fallback).
	TextTTL time.Duration `yaml:"text_ttl"`
	// Settle is how long a placement is still remembered once its request
	// got its first byte (0: the whole TTL); after that the replica's
	// summary, which also hears of evictions, decides.
	Settle time.Duration `yaml:"settle"`
	// Slots is the size of the overlay's table, a power of two.
	Slots int `yaml:"slots"`
	// Stride is the finest spacing, in blocks, of the prefix lengths a
	// placement is remembered at; it doubles until a prompt has at most
	// MaxPoints of them.
	Stride    int `yaml:"stride"`
	MaxPoints int `yaml:"max_points"`
	// Share sends cost_model's and kv_aware's placements (and their
	// settling) to the other balancers over the gossip, which record them
	// in their overlays, so a prefix one balancer just placed is predicted
	// on its replica by all of them before its summary shows it
	// (docs/routing.md#placements-shared-between-balancers). The peer
	// baselines keep their overlays to themselves, as published.
	Share bool `yaml:"share"`
}

// DefaultCostConfig returns the Llama-3.1-8B on one H100 constants of
// docs/perf-model.md (internal/perfmodel, which the simulator's
// DefaultLatencyModel is built from too, so the router's estimate and the
// simulator agree).
func DefaultCostConfig() CostConfig {
	d := perfmodel.Llama8BH100()
	return CostConfig{
		StepOverhead:         d.StepOverhead,
		WeightFloor:          d.WeightFloor,
		LinearTokPerSec:      d.LinearTokPerSec,
		AttentionPerPairNS:   d.AttentionPerPairNS,
		KVReadPerTokenNS:     d.KVReadPerTokenNS,
		RequestOverhead:      d.RequestOverhead,
		StepTokenBudget:      d.StepTokenBudget,
		DecodeContextTokens:  2048,
		QueuedPromptTokens:   2048,
		ExpectedOutputTokens: 256,
		HotPrefixQueueWait:   500 * time.Millisecond,
		MissPenalty:          1,
	}
}

// DefaultConfig returns the defaults: cost_model with the 8B/H100 model.
func DefaultConfig() Config {
	return Config{
		Policy:       PolicyCostModel,
		Seed:         1,
		PrefixBlocks: 8,
		LoadFactor:   2,
		MinLoadBound: 8,
		TieMargin:    0.05,
		SpreadMargin: 0.5,
		KVAware:      KVAwareConfig{PrefixWeight: 2, LoadWeight: 1, KVUsageWeight: 1},
		Cost:         DefaultCostConfig(),
		Overlay:      OverlayConfig{TTL: 10 * time.Second, TextTTL: 2 * time.Minute, Settle: time.Second, Slots: 1 << 16, Stride: 8, MaxPoints: 32, Share: true},
		Baselines:    DefaultBaselinesConfig(),
	}
}

// RemovedKeys names the keys the routing section no longer has and where
// their setting lives now (yamlconf.Removed). Staleness is judged once, by
// the gossip, which sees the clocks: route reads Load.Stale and
// Candidate.SummaryStale only.
func (Config) RemovedKeys() map[string]string {
	return map[string]string{
		"max_load_age":    "a load report's staleness limit is gossip.load_max_age now (default 1s), for gossiped and response reports alike",
		"max_summary_age": "a prefix summary's staleness limit is gossip.summary_max_age now (default 2s)",
	}
}

// Validate reports every invalid field at once, each named by its YAML path
// and value.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, want string, v any) {
		errs = append(errs, fmt.Errorf("%s must be %s, got %v", field, want, v))
	}
	if !Known(c.Policy) {
		bad("policy", fmt.Sprintf("one of %v or the baselines %v", Policies, Baselines), fmt.Sprintf("%q", c.Policy))
	}
	if c.PrefixBlocks < 1 {
		bad("prefix_blocks", ">= 1", c.PrefixBlocks)
	}
	if !(c.LoadFactor >= 1) || math.IsInf(c.LoadFactor, 0) {
		bad("load_factor", ">= 1 and finite", c.LoadFactor)
	}
	if c.MinLoadBound < 0 {
		bad("min_load_bound", ">= 0", c.MinLoadBound)
	}
	if !(c.TieMargin >= 0 && c.TieMargin < 1) {
		bad("tie_margin", "in [0, 1)", c.TieMargin)
	}
	if !(c.SpreadMargin >= 0 && c.SpreadMargin < 1) {
		bad("spread_margin", "in [0, 1)", c.SpreadMargin)
	}
	if c.ShedDelay < 0 {
		bad("shed_delay", ">= 0", c.ShedDelay)
	} else if c.ShedDelay > 0 && c.Policy != PolicyCostModel && Known(c.Policy) {
		bad("shed_delay", "0 with policy "+c.Policy+" (only cost_model estimates the delay it bounds)", c.ShedDelay)
	}
	if c.SLO.TTFT < 0 {
		bad("slo.ttft", ">= 0", c.SLO.TTFT)
	}
	if c.SLO.TPOT < 0 {
		bad("slo.tpot", ">= 0", c.SLO.TPOT)
	} else if c.SLO.TPOT > 0 && c.Policy != PolicyCostModel && Known(c.Policy) {
		bad("slo.tpot", "0 with policy "+c.Policy+" (only cost_model guards it)", c.SLO.TPOT)
	}
	weights := []struct {
		name string
		v    float64
	}{
		{"kv_aware.prefix_weight", c.KVAware.PrefixWeight},
		{"kv_aware.load_weight", c.KVAware.LoadWeight},
		{"kv_aware.kv_usage_weight", c.KVAware.KVUsageWeight},
	}
	sum := 0.0
	for _, w := range weights {
		if !(w.v >= 0) || math.IsInf(w.v, 0) {
			bad(w.name, ">= 0 and finite", w.v)
		} else {
			sum += w.v
		}
	}
	if sum == 0 {
		errs = append(errs, errors.New("kv_aware weights must not all be 0"))
	}
	errs = c.Cost.validate("cost_model", errs)
	errs = c.Baselines.validate("baselines", errs)
	o := c.Overlay
	if o.TTL < 0 {
		bad("overlay.ttl", ">= 0", o.TTL)
	}
	if o.TextTTL < 0 {
		bad("overlay.text_ttl", ">= 0", o.TextTTL)
	}
	if o.Settle < 0 {
		bad("overlay.settle", ">= 0", o.Settle)
	}
	if o.Slots < 2 || o.Slots&(o.Slots-1) != 0 || o.Slots > 1<<24 {
		bad("overlay.slots", "a power of two in [2, 16777216]", o.Slots)
	}
	if o.Stride < 1 {
		bad("overlay.stride", ">= 1", o.Stride)
	}
	if o.MaxPoints < 1 || o.MaxPoints > maxOverlayPoints {
		bad("overlay.max_points", fmt.Sprintf("in [1, %d]", maxOverlayPoints), o.MaxPoints)
	}
	return errors.Join(errs...)
}

func (c CostConfig) validate(path string, errs []error) []error {
	bad := func(field, want string, v any) {
		errs = append(errs, fmt.Errorf("%s.%s must be %s, got %v", path, field, want, v))
	}
	if c.StepOverhead < 0 {
		bad("step_overhead", ">= 0", c.StepOverhead)
	}
	if c.WeightFloor < 0 {
		bad("weight_floor", ">= 0", c.WeightFloor)
	}
	if !(c.LinearTokPerSec > 0) || math.IsInf(c.LinearTokPerSec, 0) {
		bad("linear_tok_per_sec", "> 0 and finite", c.LinearTokPerSec)
	}
	if !(c.AttentionPerPairNS >= 0) || math.IsInf(c.AttentionPerPairNS, 0) {
		bad("attention_per_pair_ns", ">= 0 and finite", c.AttentionPerPairNS)
	}
	if !(c.KVReadPerTokenNS >= 0) || math.IsInf(c.KVReadPerTokenNS, 0) {
		bad("kv_read_per_token_ns", ">= 0 and finite", c.KVReadPerTokenNS)
	}
	if c.RequestOverhead < 0 {
		bad("request_overhead", ">= 0", c.RequestOverhead)
	}
	if c.StepTokenBudget < 1 {
		bad("step_token_budget", ">= 1", c.StepTokenBudget)
	}
	if c.DecodeContextTokens < 0 {
		bad("decode_context_tokens", ">= 0", c.DecodeContextTokens)
	}
	if c.QueuedPromptTokens < 0 {
		bad("queued_prompt_tokens", ">= 0", c.QueuedPromptTokens)
	}
	if c.ExpectedOutputTokens < 0 {
		bad("expected_output_tokens", ">= 0", c.ExpectedOutputTokens)
	}
	if c.HotPrefixQueueWait < 0 {
		bad("hot_prefix_queue_wait", ">= 0", c.HotPrefixQueueWait)
	}
	if !(c.MissPenalty >= 0) || math.IsInf(c.MissPenalty, 0) {
		bad("miss_penalty", ">= 0 and finite", c.MissPenalty)
	}
	return errs
}

// OutputReserve returns the KV memory, in tokens, a request stating
// maxTokens output tokens (0: none stated) is expected to take for its
// output while in flight: ExpectedOutputTokens, or maxTokens where that is
// lower (a bound, not an expectation). 0 when ExpectedOutputTokens is 0.
func (c CostConfig) OutputReserve(maxTokens int) int {
	e := max(c.ExpectedOutputTokens, 0)
	if maxTokens > 0 {
		return min(maxTokens, e)
	}
	return e
}
