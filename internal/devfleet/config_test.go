package devfleet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/balancer"
	"github.com/inferrail/inferrail/balancer/route"
)

// The balancer config devfleet writes is accepted by the balancer's own
// strict loader and carries the policy, model and addresses asked for.
func TestBalancerYAMLLoads(t *testing.T) {
	for _, policy := range append(slices.Clone(route.Policies), route.Baselines...) {
		cfg := DefaultConfig()
		cfg.Policy = policy
		path := filepath.Join(t.TempDir(), "b.yaml")
		if err := os.WriteFile(path, []byte(mustBalancerYAML(t, cfg, 1, 18080, 19090, 17946, "127.0.0.1:7000")), 0o644); err != nil {
			t.Fatal(err)
		}
		bc, err := balancer.LoadConfigFile(path)
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		if err := bc.Validate(); err != nil {
			t.Fatalf("%s: invalid: %v", policy, err)
		}
		if bc.Routing.DefaultPolicy != policy || bc.Listen != "127.0.0.1:18080" || bc.Admin != "127.0.0.1:19090" ||
			len(bc.Models) != 1 || bc.Models[0].Name != cfg.Model || bc.Models[0].Tokenizer != "builtin:sim" ||
			!bc.Gossip.Enabled || bc.Gossip.Bind != "127.0.0.1:17946" || len(bc.Gossip.Join) != 1 || bc.Gossip.NodeName != "balancer-1" {
			t.Errorf("%s: config does not say what was asked: %+v", policy, bc)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"ok", func(*Config) {}, ""},
		{"no balancers is allowed", func(c *Config) { c.Balancers = 0 }, ""},
		{"replicas", func(c *Config) { c.Replicas = 0 }, "replicas"},
		{"port", func(c *Config) { c.Port = 70000 }, "port"},
		{"policy", func(c *Config) { c.Policy = "" }, "policy"},
		{"unknown policy", func(c *Config) { c.Policy = "sglang" }, `policy must be one of`},
		{"a baseline is a policy", func(c *Config) { c.Policy = "llm_d" }, ""},
		{"block size", func(c *Config) { c.BlockSize = 0 }, "block_size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestBalancerYAMLWithoutTokenizer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NoTokenizer = true
	path := filepath.Join(t.TempDir(), "b.yaml")
	if err := os.WriteFile(path, []byte(mustBalancerYAML(t, cfg, 0, 18080, 19090, 17946, "127.0.0.1:7000")), 0o644); err != nil {
		t.Fatal(err)
	}
	bc, err := balancer.LoadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := bc.Validate(); err != nil {
		t.Fatalf("invalid: %v", err)
	}
	if m := bc.Models[0]; m.Tokenizer != "" || !m.TextPrefix.Enabled || m.BlockSize != cfg.BlockSize {
		t.Errorf("model = %+v, want no tokenizer, text_prefix on, block size %d", m, cfg.BlockSize)
	}
}
