package route

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigIsValidForEveryPolicy(t *testing.T) {
	for _, name := range allPolicies() {
		t.Run(name, func(t *testing.T) {
			p := newPolicy(t, name, nil)
			if p.Name() != name {
				t.Errorf("Name() = %q, want %q", p.Name(), name)
			}
			hasOverlay := overlayOf(p) != nil
			wantOverlay := name == PolicyKVAware || name == PolicyCostModel || name == PolicyDynamoKV || name == PolicyLLMD
			if hasOverlay != wantOverlay {
				t.Errorf("overlayOf(%s) != nil is %v, want %v", name, hasOverlay, wantOverlay)
			}
		})
	}
	if got := DefaultConfig().Policy; got != PolicyCostModel || IsBaseline(got) {
		t.Errorf("default policy = %q, want %q", got, PolicyCostModel)
	}
}

func TestValidateNamesFieldAndValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string // substrings of the error, each must appear
	}{
		{"unknown policy", func(c *Config) { c.Policy = "fastest" }, []string{`policy must be one of`, `"fastest"`, "sglang_cache_aware"}},
		{"sglang threshold", func(c *Config) { c.Baselines.SGLang.CacheThreshold = 1.5 }, []string{"baselines.sglang.cache_threshold must be in [0, 1], got 1.5"}},
		{"sglang abs", func(c *Config) { c.Baselines.SGLang.BalanceAbsThreshold = -1 }, []string{"baselines.sglang.balance_abs_threshold must be >= 0, got -1"}},
		{"sglang rel", func(c *Config) { c.Baselines.SGLang.BalanceRelThreshold = 0.5 }, []string{"baselines.sglang.balance_rel_threshold must be >= 1 and finite, got 0.5"}},
		{"sglang interval", func(c *Config) { c.Baselines.SGLang.EvictionInterval = 0 }, []string{"baselines.sglang.eviction_interval must be > 0, got 0s"}},
		{"sglang tree", func(c *Config) { c.Baselines.SGLang.MaxTreeSize = 0 }, []string{"baselines.sglang.max_tree_size must be in [1, 17179869184], got 0"}},
		{"sglang rule", func(c *Config) { c.Baselines.SGLang.Rule = "fair" }, []string{`baselines.sglang.rule must be gate or imbalance, got "fair"`}},
		{"sglang miss", func(c *Config) { c.Baselines.SGLang.Miss = "" }, []string{`baselines.sglang.miss must be min_load or smallest_tree, got ""`}},
		{"dynamo weight", func(c *Config) { c.Baselines.Dynamo.OverlapScoreWeight = -1 }, []string{"baselines.dynamo.overlap_score_weight must be >= 0 and finite, got -1"}},
		{"dynamo credit", func(c *Config) { c.Baselines.Dynamo.OverlapScoreCredit = 2 }, []string{"baselines.dynamo.overlap_score_credit must be in [0, 1], got 2"}},
		{"dynamo temperature", func(c *Config) { c.Baselines.Dynamo.RouterTemperature = math.Inf(1) }, []string{"baselines.dynamo.router_temperature must be >= 0 and finite, got +Inf"}},
		{"llm-d weight", func(c *Config) { c.Baselines.LLMD.QueueWeight = -2 }, []string{"baselines.llm_d.queue_weight must be >= 0 and finite, got -2"}},
		{"llm-d zero weights", func(c *Config) { c.Baselines.LLMD = LLMDConfig{} }, []string{"baselines.llm_d weights must not all be 0"}},
		{"empty policy", func(c *Config) { c.Policy = "" }, []string{`policy must be one of`, `""`}},
		{"prefix blocks", func(c *Config) { c.PrefixBlocks = 0 }, []string{"prefix_blocks must be >= 1, got 0"}},
		{"load factor", func(c *Config) { c.LoadFactor = 0.9 }, []string{"load_factor must be >= 1 and finite, got 0.9"}},
		{"min load bound", func(c *Config) { c.MinLoadBound = -1 }, []string{"min_load_bound must be >= 0, got -1"}},
		{"tie margin", func(c *Config) { c.TieMargin = 1 }, []string{"tie_margin must be in [0, 1), got 1"}},
		{"spread margin", func(c *Config) { c.SpreadMargin = -0.1 }, []string{"spread_margin must be in [0, 1), got -0.1"}},
		{"negative shed delay", func(c *Config) { c.ShedDelay = -time.Second }, []string{"shed_delay must be >= 0, got -1s"}},
		{"shed delay without cost_model", func(c *Config) { c.Policy, c.ShedDelay = PolicyRoundRobin, time.Second }, []string{"shed_delay must be 0 with policy round_robin (only cost_model estimates the delay it bounds), got 1s"}},
		{"negative objectives", func(c *Config) { c.SLO = SLOConfig{TTFT: -time.Second, TPOT: -time.Millisecond} }, []string{"slo.ttft must be >= 0, got -1s", "slo.tpot must be >= 0, got -1ms"}},
		{"a TPOT objective without cost_model", func(c *Config) { c.Policy, c.SLO.TPOT = PolicyLeastRequest, time.Millisecond }, []string{"slo.tpot must be 0 with policy least_request (only cost_model guards it), got 1ms"}},
		{"negative weight", func(c *Config) { c.KVAware.LoadWeight = -1 }, []string{"kv_aware.load_weight must be >= 0 and finite, got -1"}},
		{"zero weights", func(c *Config) { c.KVAware = KVAwareConfig{} }, []string{"kv_aware weights must not all be 0"}},
		{"rate", func(c *Config) { c.Cost.LinearTokPerSec = 0 }, []string{"cost_model.linear_tok_per_sec must be > 0 and finite, got 0"}},
		{"budget", func(c *Config) { c.Cost.StepTokenBudget = 0 }, []string{"cost_model.step_token_budget must be >= 1, got 0"}},
		{"hot wait", func(c *Config) { c.Cost.HotPrefixQueueWait = -1 }, []string{"cost_model.hot_prefix_queue_wait must be >= 0, got -1ns"}},
		{"slots", func(c *Config) { c.Overlay.Slots = 1000 }, []string{"overlay.slots must be a power of two in [2, 16777216], got 1000"}},
		{"points", func(c *Config) { c.Overlay.MaxPoints = 0 }, []string{"overlay.max_points must be in [1, 64], got 0"}},
		{"every problem at once", func(c *Config) {
			c.PrefixBlocks = -2
			c.Cost.AttentionPerPairNS = -1
			c.Overlay.Stride = 0
		}, []string{"prefix_blocks", "cost_model.attention_per_pair_ns", "overlay.stride"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
			if _, err := New(cfg); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
}

func TestOverlayDisabledByZeroTTL(t *testing.T) {
	p := newPolicy(t, PolicyCostModel, func(c *Config) { c.Overlay.TTL, c.Overlay.TextTTL = 0, 0 })
	if overlayOf(p) != nil {
		t.Error("overlay present with ttl 0")
	}
}

func TestErrorsAreDistinct(t *testing.T) {
	if errors.Is(ErrNoCandidate, ErrAllFull) || errors.Is(ErrAllFull, ErrNoCandidate) {
		t.Error("ErrNoCandidate and ErrAllFull must be distinct")
	}
}
