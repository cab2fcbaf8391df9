package route

import (
	"fmt"
	"math"
	"time"
)

// The peers' routing rules, re-implemented from their published source as
// comparisons for `inferrail bench compare` (docs/baselines.md). They are not
// features: Policies stays the production list, and DefaultConfig never
// names one of these.
const (
	// PolicySGLangCacheAware is the SGLang router's cache_aware policy: an
	// approximate prefix tree of what this balancer sent where.
	PolicySGLangCacheAware = "sglang_cache_aware"
	// PolicyDynamoKV is NVIDIA Dynamo's KV router cost: overlap weight ×
	// prefill blocks + decode blocks, lowest wins.
	PolicyDynamoKV = "dynamo_kv"
	// PolicyLLMD is llm-d's default scheduling profile: prefix-cache,
	// queue and KV-cache-utilization scorers, weighted, max-score picker.
	PolicyLLMD = "llm_d"
)

// Baselines lists the peer policies Config.Policy also accepts.
var Baselines = []string{PolicySGLangCacheAware, PolicyDynamoKV, PolicyLLMD}

// IsBaseline reports whether name is one of Baselines.
func IsBaseline(name string) bool {
	for _, b := range Baselines {
		if b == name {
			return true
		}
	}
	return false
}

// Known reports whether name is a policy New accepts: one of Policies or of
// Baselines.
func Known(name string) bool {
	for _, p := range Policies {
		if p == name {
			return true
		}
	}
	return IsBaseline(name)
}

// BaselinesConfig holds the peer policies' parameters, each with the peer's
// own default (docs/baselines.md names the source of every value).
type BaselinesConfig struct {
	SGLang SGLangConfig `yaml:"sglang"`
	Dynamo DynamoConfig `yaml:"dynamo"`
	LLMD   LLMDConfig   `yaml:"llm_d"`
}

// SGLang cache_aware rules (SGLangConfig.Rule).
const (
	// SGLangRuleGate is the current rule (smg, August 2026): no fleet-wide
	// switch; a cache hit goes to the least loaded replica holding the
	// matched prefix unless that one is above both balance thresholds
	// relative to the mean load, in which case the least loaded takes it.
	SGLangRuleGate = "gate"
	// SGLangRuleImbalance is the rule SGLang's router shipped from
	// November 2024 to August 2026: when the fleet is imbalanced (both
	// thresholds on max vs min load) the least loaded takes every request.
	SGLangRuleImbalance = "imbalance"
)

// SGLang cache-miss targets (SGLangConfig.Miss).
const (
	// SGLangMissMinLoad sends a miss to the least loaded replica (SGLang
	// since December 2025).
	SGLangMissMinLoad = "min_load"
	// SGLangMissSmallestTree sends a miss to the replica with the smallest
	// tree (SGLang before December 2025).
	SGLangMissSmallestTree = "smallest_tree"
)

// SGLangConfig parameterises sglang_cache_aware. Load is this balancer's
// requests in flight per replica, as SGLang's router counts its own.
type SGLangConfig struct {
	// CacheThreshold is the matched share of the prompt above which the
	// request follows its match (SGLang --cache-threshold, 0.3).
	CacheThreshold float64 `yaml:"cache_threshold"`
	// BalanceAbsThreshold and BalanceRelThreshold are the load spread that
	// counts as imbalance: max - min > abs and max > rel × min (rule
	// imbalance), or load > mean + abs and load > rel × mean (rule gate)
	// (SGLang --balance-abs-threshold 64, --balance-rel-threshold 1.5).
	BalanceAbsThreshold int     `yaml:"balance_abs_threshold"`
	BalanceRelThreshold float64 `yaml:"balance_rel_threshold"`
	// EvictionInterval is how often the tree is cut back to MaxTreeSize
	// (SGLang --eviction-interval, 120s).
	EvictionInterval time.Duration `yaml:"eviction_interval"`
	// MaxTreeSize bounds the tree, in tokens over every replica (SGLang
	// --max-tree-size, 2^26; SGLang counts characters for text and tokens
	// for token ids, and we key on token blocks).
	MaxTreeSize int `yaml:"max_tree_size"`
	// Rule is gate (current SGLang) or imbalance (the earlier rule).
	Rule string `yaml:"rule"`
	// Miss is where a request below CacheThreshold goes: min_load (current
	// SGLang) or smallest_tree (the earlier rule).
	Miss string `yaml:"miss"`
}

// DynamoConfig parameterises dynamo_kv.
type DynamoConfig struct {
	// OverlapScoreWeight weighs the prefill blocks against the decode blocks
	// (Dynamo --kv-overlap-score-weight, 1.0; called prefill_load_scale
	// since Dynamo 1.x).
	OverlapScoreWeight float64 `yaml:"overlap_score_weight"`
	// OverlapScoreCredit is the share of each cached block credited against
	// the prefill blocks, in [0, 1] (Dynamo 1.x overlap_score_credit, 1.0;
	// earlier versions credit every cached block, which is 1).
	OverlapScoreCredit float64 `yaml:"overlap_score_credit"`
	// RouterTemperature is 0 for the lowest cost (random among ties), or the
	// temperature of a softmax sample over the costs normalised by their
	// range (Dynamo --router-temperature, 0.0).
	RouterTemperature float64 `yaml:"router_temperature"`
}

// LLMDConfig parameterises llm_d: the weights of its default scheduling
// profile's scorers (llm-d's chart: queue 2, kv-cache utilization 2, prefix
// cache 3).
type LLMDConfig struct {
	PrefixCacheWeight        float64 `yaml:"prefix_cache_weight"`
	QueueWeight              float64 `yaml:"queue_weight"`
	KVCacheUtilizationWeight float64 `yaml:"kv_cache_utilization_weight"`
}

// DefaultBaselinesConfig returns the peers' own defaults.
func DefaultBaselinesConfig() BaselinesConfig {
	return BaselinesConfig{
		SGLang: SGLangConfig{
			CacheThreshold:      0.3,
			BalanceAbsThreshold: 64,
			BalanceRelThreshold: 1.5,
			EvictionInterval:    120 * time.Second,
			MaxTreeSize:         1 << 26,
			Rule:                SGLangRuleGate,
			Miss:                SGLangMissMinLoad,
		},
		Dynamo: DynamoConfig{OverlapScoreWeight: 1, OverlapScoreCredit: 1, RouterTemperature: 0},
		LLMD:   LLMDConfig{PrefixCacheWeight: 3, QueueWeight: 2, KVCacheUtilizationWeight: 2},
	}
}

func (c BaselinesConfig) validate(path string, errs []error) []error {
	bad := func(field, want string, v any) {
		errs = append(errs, fmt.Errorf("%s.%s must be %s, got %v", path, field, want, v))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	s := c.SGLang
	if !(s.CacheThreshold >= 0 && s.CacheThreshold <= 1) {
		bad("sglang.cache_threshold", "in [0, 1]", s.CacheThreshold)
	}
	if s.BalanceAbsThreshold < 0 {
		bad("sglang.balance_abs_threshold", ">= 0", s.BalanceAbsThreshold)
	}
	if !(s.BalanceRelThreshold >= 1) || !finite(s.BalanceRelThreshold) {
		bad("sglang.balance_rel_threshold", ">= 1 and finite", s.BalanceRelThreshold)
	}
	if s.EvictionInterval <= 0 {
		bad("sglang.eviction_interval", "> 0", s.EvictionInterval)
	}
	if s.MaxTreeSize < 1 || s.MaxTreeSize > 1<<34 {
		bad("sglang.max_tree_size", "in [1, 17179869184]", s.MaxTreeSize)
	}
	if s.Rule != SGLangRuleGate && s.Rule != SGLangRuleImbalance {
		bad("sglang.rule", "gate or imbalance", fmt.Sprintf("%q", s.Rule))
	}
	if s.Miss != SGLangMissMinLoad && s.Miss != SGLangMissSmallestTree {
		bad("sglang.miss", "min_load or smallest_tree", fmt.Sprintf("%q", s.Miss))
	}
	d := c.Dynamo
	if !(d.OverlapScoreWeight >= 0) || !finite(d.OverlapScoreWeight) {
		bad("dynamo.overlap_score_weight", ">= 0 and finite", d.OverlapScoreWeight)
	}
	if !(d.OverlapScoreCredit >= 0 && d.OverlapScoreCredit <= 1) {
		bad("dynamo.overlap_score_credit", "in [0, 1]", d.OverlapScoreCredit)
	}
	if !(d.RouterTemperature >= 0) || !finite(d.RouterTemperature) {
		bad("dynamo.router_temperature", ">= 0 and finite", d.RouterTemperature)
	}
	l := c.LLMD
	sum := 0.0
	for _, w := range []struct {
		name string
		v    float64
	}{
		{"llm_d.prefix_cache_weight", l.PrefixCacheWeight},
		{"llm_d.queue_weight", l.QueueWeight},
		{"llm_d.kv_cache_utilization_weight", l.KVCacheUtilizationWeight},
	} {
		if !(w.v >= 0) || !finite(w.v) {
			bad(w.name, ">= 0 and finite", w.v)
		} else {
			sum += w.v
		}
	}
	if sum == 0 {
		errs = append(errs, fmt.Errorf("%s.llm_d weights must not all be 0", path))
	}
	return errs
}
