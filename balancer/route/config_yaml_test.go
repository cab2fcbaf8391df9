package route

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// decodeFile decodes a YAML file strictly over DefaultConfig, the way the
// balancer's config loader does.
func decodeFile(t *testing.T, path string) Config {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return cfg
}

// The documented YAML (docs/routing.md) spells out exactly the defaults,
// and every field has a YAML name.
func TestDefaultsYAMLMatchesDefaultConfig(t *testing.T) {
	cfg := decodeFile(t, "testdata/defaults.yaml")
	if diff := cmp.Diff(DefaultConfig(), cfg); diff != "" {
		t.Errorf("testdata/defaults.yaml differs from DefaultConfig (-want +got):\n%s", diff)
	}
	var zero Config
	b, err := os.ReadFile("testdata/defaults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &zero); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DefaultConfig(), zero); diff != "" {
		t.Errorf("testdata/defaults.yaml over a zero Config misses fields (-want +got):\n%s", diff)
	}
}

func TestBadYAMLNamesEveryProblem(t *testing.T) {
	err := decodeFile(t, "testdata/bad.yaml").Validate()
	if err == nil {
		t.Fatal("Validate() = nil for testdata/bad.yaml")
	}
	for _, want := range []string{
		`policy must be one of`, "prefix_blocks", "load_factor", "min_load_bound", "spread_margin", "slo.ttft", "slo.tpot",
		"kv_aware.prefix_weight", "cost_model.linear_tok_per_sec",
		"cost_model.step_token_budget", "cost_model.hot_prefix_queue_wait", "overlay.ttl",
		"overlay.slots", "overlay.stride", "overlay.max_points",
		"baselines.sglang.cache_threshold", "baselines.sglang.balance_rel_threshold",
		"baselines.sglang.eviction_interval", "baselines.sglang.max_tree_size", "baselines.sglang.rule",
		"baselines.sglang.miss", "baselines.dynamo.overlap_score_credit", "baselines.dynamo.router_temperature",
		"baselines.llm_d weights must not all be 0",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() does not mention %q:\n%v", want, err)
		}
	}
}

func TestUnknownYAMLKeyIsRejected(t *testing.T) {
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(strings.NewReader("cost_model: {linear_tok_per_s: 1}\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err == nil || !strings.Contains(err.Error(), "linear_tok_per_s") {
		t.Errorf("decode of a misspelt key: %v, want an error naming it", err)
	}
}
