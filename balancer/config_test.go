package balancer

import (
	"os"

	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/yamlconf"
)

func loadAndValidate(path string) (Config, error) {
	cfg, err := LoadConfigFile(path)
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func TestGoodConfigs(t *testing.T) {
	for _, path := range []string{
		"testdata/good-static.yaml", "testdata/good-gossip.yaml", "testdata/good-discovery.yaml",
		"../deploy/local.yaml", "../deploy/inferrail.example.yaml",
	} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := loadAndValidate(path); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		})
	}
}

// The peer baselines are accepted as the default policy and per model, with
// their parameters, and keep the peers' defaults where the file is silent.
func TestBaselineConfig(t *testing.T) {
	cfg, err := loadAndValidate("testdata/good-baseline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Models[0]
	got := cfg.routeConfig(&m)
	want := route.DefaultBaselinesConfig()
	want.Dynamo.RouterTemperature = 0.5
	if got.Policy != route.PolicyDynamoKV || got.Baselines != want {
		t.Errorf("route config %q %+v, want dynamo_kv %+v", got.Policy, got.Baselines, want)
	}
	if auto := cfg.autoModel("x").Routing; auto.Policy != route.PolicySGLangCacheAware {
		t.Errorf("automatic model policy %q, want the default sglang_cache_aware", auto.Policy)
	}
	if _, err := route.New(got); err != nil {
		t.Errorf("route.New(%s): %v", got.Policy, err)
	}
	cfg.Routing.DefaultPolicy = "sglang"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `routing.default_policy must be one of`) ||
		!strings.Contains(err.Error(), "sglang_cache_aware") {
		t.Errorf("Validate() = %v, want it to name the policies and baselines", err)
	}
}

func TestGoodConfigValues(t *testing.T) {
	cfg, err := loadAndValidate("testdata/good-static.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Models[0]
	// Keys not in the file keep the model defaults.
	def := defaultModel()
	if m.BlockSize != 16 || m.Routing.PrefixBlocks != 4 || m.Routing.Cost != def.Routing.Cost ||
		m.Routing.Overlay != def.Routing.Overlay || m.Routing.LoadFactor != def.Routing.LoadFactor {
		t.Errorf("model defaults not kept: %+v", m)
	}
	if got := cfg.routeConfig(&m); got.Policy != "prefix_hash" || got.Seed != 1 {
		t.Errorf("route config policy/seed = %q/%d", got.Policy, got.Seed)
	}
	if cfg.Retry.MaxAttempts != 2 || cfg.Retry.BackoffBase != 25*time.Millisecond {
		t.Errorf("retry = %+v", cfg.Retry)
	}
	d, err := loadAndValidate("testdata/good-discovery.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if g := d.Discovery.DNS[0]; g.Interval != 5*time.Second || g.Timeout != 2*time.Second || g.MaxConcurrency != 64 || g.Port != 8000 {
		t.Errorf("discovery group defaults not kept: %+v", g)
	}
	g, err := loadAndValidate("testdata/good-gossip.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.autoModel("x").Routing; got.Policy != "kv_aware" || got.Seed != 7 {
		t.Errorf("auto model routing = %q/%d", got.Policy, got.Seed)
	}
}

func TestBadConfigsReportEveryProblem(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"bad-unknown-keys.yaml", []string{
			"line 1: listn: unknown key",
			"line 6: models[0].routing.cost_model.prefil_rate: unknown key",
			"line 11: replicas[0].maxconcurrency: unknown key",
		}},
		{"bad-values.yaml", []string{
			`listen must be host:port, got "nowhere"`,
			`admin must differ from listen`,
			"models[0].block_size must be in [1, 65536], got 0",
			`models[0].routing.policy must be one of`,
			"models[0].routing.baselines.sglang.cache_threshold must be in [0, 1], got 2",
			`models[1].name "m" is already used by models[0].name`,
			`replicas[0].url must be an http:// or https:// URL, got "ftp://x"`,
			"replicas[0].models must name at least one model",
			"replicas[0].max_concurrency must be >= 0, got -1",
			"health.max_ejected_share must be in [0,1], got 2",
			"retry.max_attempts must be in [1, 100], got 0",
			"timeouts.route must be > 0, got 0s",
			"gossip.resync_after must be >= 0 (0: the default), got -1s",
			"decision_log.sample_ratio must be in [0, 1], got 2",
			"decision_log.queue_size must be in [1, 1048576], got 0",
		}},
		{"bad-gateway.yaml", []string{
			`replicas[0].path_prefix must be a path starting with /, got "openai/v1"`,
			`replicas[0].probe_path must be a path starting with /, got "health"`,
			"auth.keys[0].key and auth.keys[0].sha256 are both set",
			`auth.keys[1].name "a" is not unique`,
			`auth.keys[1].sha256 must be 64 hex digits (a SHA-256 digest), got "nothex"`,
			"auth.keys[2].name must not be empty",
			"auth.keys[2] needs key or sha256",
			"auth.keys[2].models[0] must not be empty",
			"auth.keys[2].limits.burst needs requests_per_second > 0",
			"auth.admin_token and auth.admin_token_sha256 are both set",
			`rate_limits.client_ip_header must be a header name, got "X Forwarded"`,
			"rate_limits.default.requests_per_second must be in [0, 1e9], got -1",
			"rate_limits.default.tokens_per_minute must be in [0, 1e15], got -10",
			`rate_limits.redis.addr must be host:port, got "redis"`,
			"rate_limits.redis.timeout must be > 0, got 0s",
			`cors.allowed_origins[1] must be "*" or scheme://host[:port], got "not an origin"`,
			"cors.max_age must be >= 0, got -1s",
		}},
		{"bad-discovery.yaml", []string{
			"models[0].text_prefix.bytes_per_token must be in [1, 64], got 0",
			`discovery.resolver must be host:port, got "nowhere"`,
			"discovery.dns[0].names must list at least one DNS name",
			"discovery.dns[0].port must be in [1, 65535], got 0",
			"discovery.dns[0].interval must be >= 100ms, got 10ms",
			"discovery.dns[0].timeout must be > 0, got 0s",
			"discovery.dns[0].models must name at least one model",
			`discovery.dns[1].group "pool" is not unique`,
			`discovery.dns[1].names[0] must be a DNS name, got "http://x:80"`,
			"discovery.dns[1] caps must not be negative, got max_concurrency 0, max_pending -1",
			"discovery.dns[1].weight must be in [0, 1e6], got -1",
			`discovery.dns[1].probe_path must be a path starting with /, got "health"`,
			"discovery.dns[2].group must not be empty",
			"discovery.dns[2].port must be in [1, 65535], got 70000",
			"discovery.dns[2].models[0] must not be empty",
		}},
		{"bad-removed-keys.yaml", []string{
			"line 4: models[0].routing.max_load_age: removed: a load report's staleness limit is gossip.load_max_age now",
			"line 5: models[0].routing.max_summary_age: removed: a prefix summary's staleness limit is gossip.summary_max_age now",
		}},
		{"bad-discovery-keys.yaml", []string{
			"line 7: discovery.dns[0].refresh: unknown key",
		}},
		{"bad-response-cache.yaml", []string{
			"response_cache.ttl must be > 0, got 0s",
			"response_cache.max_entry_bytes must be in [1, max_bytes], got 0",
			"response_cache.semantic.max_distance must be a cosine distance in [0, 2] (0: identical, smaller is stricter; it is not a similarity), got 2.5",
			"response_cache.semantic.dimensions must be in [0, 65536] (0: the first embedding's), got -3",
			`response_cache.semantic.embeddings.url must be an http:// or https:// URL, got "embedder:8000"`,
			"response_cache.semantic.embeddings.model must not be empty",
			"response_cache.semantic.embeddings.timeout must be > 0, got 0s",
			`response_cache.redis.addr must be host:port, got "redis"`,
		}},
		{"bad-types.yaml", []string{
			"line 1: cannot unmarshal !!str `lots`",
			"line 3: cannot unmarshal !!str `soon`",
			"line 8: cannot unmarshal !!str `many`",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			_, err := loadAndValidate(filepath.Join("testdata", tc.file))
			if err == nil {
				t.Fatal("no error")
			}
			var missing []string
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					missing = append(missing, w)
				}
			}
			if diff := cmp.Diff([]string(nil), missing); diff != "" {
				t.Errorf("messages missing from:\n%v\n(-want +got):\n%s", err, diff)
			}
		})
	}
}

func TestDecodeEmptyAndMultiDocument(t *testing.T) {
	base := DefaultConfig()
	got, err := DecodeConfig(nil, base)
	if err != nil || got.Listen != base.Listen {
		t.Errorf("empty document: %v, %+v", err, got.Listen)
	}
	if _, err := DecodeConfig([]byte("listen: a:1\n---\nlisten: b:2\n"), base); err == nil {
		t.Error("two documents accepted")
	}
}

// TestExampleDocumentsEveryKey checks that deploy/inferrail.example.yaml
// names every config key, and that outside its sample entries it holds the
// defaults.
func TestExampleDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../deploy/inferrail.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	missing, err := yamlconf.MissingKeys[Config](b)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("keys missing from the example: %v", missing)
	}
	cfg, err := loadAndValidate("../deploy/inferrail.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Models, cfg.Replicas, cfg.Gossip.Join = nil, nil, nil
	cfg.Gateway.Auth.Keys, cfg.Gateway.CORS.AllowedOrigins, cfg.ResponseCache.SampledModels = nil, nil, nil
	dns := cfg.Discovery.DNS
	cfg.Discovery.DNS = nil
	if diff := cmp.Diff(DefaultConfig(), cfg); diff != "" {
		t.Errorf("example differs from the defaults (-want +got):\n%s", diff)
	}
	if len(dns) != 1 || dns[0].Interval != defaultDNSGroup().Interval || dns[0].Timeout != defaultDNSGroup().Timeout {
		t.Errorf("example discovery.dns = %+v, want one group with the default interval and timeout", dns)
	}
	m := defaultModel()
	got, _ := loadAndValidate("../deploy/inferrail.example.yaml")
	gm := got.Models[0]
	gm.Name, gm.Aliases, gm.Tokenizer = "", nil, ""
	if diff := cmp.Diff(m, gm); diff != "" {
		t.Errorf("example model differs from the model defaults (-want +got):\n%s", diff)
	}
}

func TestPreflight(t *testing.T) {
	cfg := DefaultConfig()
	m := defaultModel()
	m.Name, m.Tokenizer = "m", "/nonexistent/model"
	ok := defaultModel()
	ok.Name, ok.Tokenizer = "ok", "builtin:sim"
	cfg.Models = []ModelConfig{ok, m}
	cfg.Gossip.KeyFile = "/nonexistent/key"
	cfg.DecisionLog.Path = "/nonexistent/dir/decisions.jsonl"
	err := cfg.Preflight()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`models[1].tokenizer "/nonexistent/model"`, "gossip.key_file",
		`decision_log.path "/nonexistent/dir/decisions.jsonl": its directory does not exist`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "models[0]") {
		t.Errorf("the builtin tokenizer failed: %v", err)
	}
}
