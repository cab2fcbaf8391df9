package sidecar

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/gossip"
)

func TestLoadConfigFileGood(t *testing.T) {
	full := DefaultConfig()
	full.EngineURL = "http://127.0.0.1:8001"
	full.Engine = EngineVLLM
	full.Model = "meta-llama/Llama-3.1-8B-Instruct"
	full.Tokenizer = TokenizerSim
	full.Listen = "0.0.0.0:8100"
	full.Admin = "0.0.0.0:9100"
	full.ShutdownTimeout = 20 * time.Second
	full.KVEvents = KVEventsConfig{
		Endpoint: "tcp://127.0.0.1:5557", ReplayEndpoint: "tcp://127.0.0.1:6557", Topic: "kv-events",
		DataParallelSize: 2, SilentGrace: 5 * time.Second, MaxMessageBytes: 8 << 20,
	}
	full.Scrape = ScrapeConfig{Path: "/metrics", Interval: 100 * time.Millisecond, Timeout: 250 * time.Millisecond, MaxBytes: 1 << 20}
	full.Proxy = ProxyConfig{MaxIdleConnsPerHost: 256, DialTimeout: time.Second, MaxInspectBytes: 4 << 20}
	full.Summary = SummaryConfig{FalsePositiveRate: 0.02, Capacity: 30000, RebuildPeriod: 2 * time.Minute, RebuildRemovedFraction: 0.5}
	full.Gossip = GossipConfig{NodeConfig: gossip.NodeConfig{
		Bind: "0.0.0.0:7946", Advertise: "10.0.0.7", NodeName: "engine-0", Profile: "local",
		Join:    []string{"balancer-0.balancer:7946", "balancer-1.balancer:7946"},
		KeyFile: "/etc/inferrail/gossip.key", ClusterLabel: "prod",
		Timings: gossip.Timings{LoadInterval: 5 * time.Millisecond, ResyncAfter: 15 * time.Millisecond, ResyncInterval: 50 * time.Millisecond},
	}}
	minimal := DefaultConfig()
	minimal.KVEvents.Endpoint = "tcp://127.0.0.1:5557"

	tests := []struct {
		name string
		file string
		want Config
	}{
		{"full", "testdata/good-full.yaml", full},
		{"minimal", "testdata/good-minimal.yaml", minimal},
		{"empty", "testdata/good-empty.yaml", DefaultConfig()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadConfigFile(tt.file)
			if err != nil {
				t.Fatalf("LoadConfigFile: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestLoadConfigFileBad(t *testing.T) {
	tests := []struct {
		name string
		file string
		// wants are substrings the error must contain: at load time when
		// loadErr, else from Validate.
		loadErr bool
		wants   []string
	}{
		{"unknown key", "testdata/bad-unknown-key.yaml", true, []string{"enigne"}},
		{"nested unknown key", "testdata/bad-nested-unknown-key.yaml", true, []string{"timeout_ms"}},
		{"wrong type", "testdata/bad-type.yaml", true, []string{"fast"}},
		{"two documents", "testdata/bad-two-docs.yaml", true, []string{"more than one document"}},
		{"bad values", "testdata/bad-values.yaml", false, []string{
			`engine_url must be an http:// or https:// URL with a host, got "ftp://x"`,
			`engine must be auto, vllm, sglang or llamacpp, got "tgi"`,
			`block_size must be in 1..65536, got "0"`,
			`listen must be host:port, got "nowhere"`,
			`kv_events.endpoint must be tcp://host:port, got "ipc:///tmp/kv"`,
			`kv_events.data_parallel_size must be in 1..1024, got "0"`,
			`scrape.interval must be >= 10ms, got "1ms"`,
			`summary.false_positive_rate must be in (0, 0.5), got "1.5"`,
			`gossip.join[0] must be host:port, got "not-a-hostport"`,
			`gossip.load_interval must be 0 (the default) or >= 1ms, got 10µs`,
			`gossip.resync_interval must be >= 0 (0: the default), got -1s`,
		}},
		{"missing file", "testdata/nope.yaml", true, []string{"read config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfigFile(tt.file)
			if tt.loadErr {
				if err == nil {
					t.Fatalf("LoadConfigFile(%s) = nil error, want one", tt.file)
				}
			} else {
				if err != nil {
					t.Fatalf("LoadConfigFile: %v", err)
				}
				err = cfg.Validate()
				if err == nil {
					t.Fatal("Validate() = nil, want errors")
				}
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidateEachField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"defaults", func(*Config) {}, ""},
		{"tokenizer", func(c *Config) { c.Tokenizer = "builtin:gpt2" }, "tokenizer"},
		{"admin equals listen", func(c *Config) { c.Admin = c.Listen }, "admin must differ"},
		{"replay without endpoint", func(c *Config) { c.KVEvents.ReplayEndpoint = "tcp://h:1" }, "needs kv_events.endpoint"},
		{"scrape timeout", func(c *Config) { c.Scrape.Timeout = 0 }, "scrape.timeout"},
		{"scrape max bytes", func(c *Config) { c.Scrape.MaxBytes = 10 }, "scrape.max_bytes"},
		{"scrape path", func(c *Config) { c.Scrape.Path = "metrics" }, "scrape.path"},
		{"silent grace", func(c *Config) { c.KVEvents.SilentGrace = 0 }, "kv_events.silent_grace"},
		{"max message bytes", func(c *Config) { c.KVEvents.MaxMessageBytes = 1 << 40 }, "kv_events.max_message_bytes"},
		{"pool", func(c *Config) { c.Proxy.MaxIdleConnsPerHost = 0 }, "proxy.max_idle_conns_per_host"},
		{"dial timeout", func(c *Config) { c.Proxy.DialTimeout = -1 }, "proxy.dial_timeout"},
		{"capacity", func(c *Config) { c.Summary.Capacity = -1 }, "summary.capacity"},
		{"rebuild fraction", func(c *Config) { c.Summary.RebuildRemovedFraction = 0 }, "summary.rebuild_removed_fraction"},
		{"gossip bind", func(c *Config) { c.Gossip.Bind = "7946" }, "gossip.bind"},
		{"advertise", func(c *Config) { c.Gossip.Advertise = "not an ip" }, "gossip.advertise"},
		{"gossip bind name", func(c *Config) { c.Gossip.Bind = "localhost:7946" }, "gossip.bind must be IP:port"},
		{"gossip profile", func(c *Config) { c.Gossip.Profile = "wan" }, "gossip.profile"},
		{"gossip load max age", func(c *Config) { c.Gossip.LoadMaxAge = -time.Second }, "gossip.load_max_age"},
		{"gossip tight timings ok", func(c *Config) { c.Gossip.LoadInterval, c.Gossip.ResyncAfter = time.Millisecond, time.Millisecond }, ""},
		{"advertise ip ok", func(c *Config) { c.Gossip.Advertise = "10.1.2.3" }, ""},
		{"ports zero ok", func(c *Config) { c.Listen, c.Admin = "127.0.0.1:0", "127.0.0.1:0" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}

func TestApplyEnv(t *testing.T) {
	env := map[string]string{EnvPodIP: "10.0.0.9", EnvPodName: "vllm-7", EnvNodeName: "gpu-node-3"}
	c := DefaultConfig()
	c.ApplyEnv(func(k string) string { return env[k] })
	if got := [3]string{c.Gossip.Advertise, c.Gossip.NodeName, c.Gossip.KubeNode}; got != [3]string{"10.0.0.9", "vllm-7", "gpu-node-3"} {
		t.Errorf("from env: got %q", got)
	}
	// Values already set win over the environment.
	c = DefaultConfig()
	c.Gossip.Advertise, c.Gossip.NodeName, c.Gossip.KubeNode = "10.9.9.9", "mine", "n"
	c.ApplyEnv(func(k string) string { return env[k] })
	if got := [3]string{c.Gossip.Advertise, c.Gossip.NodeName, c.Gossip.KubeNode}; got != [3]string{"10.9.9.9", "mine", "n"} {
		t.Errorf("set values overwritten: got %q", got)
	}
}

func FuzzDecodeConfig(f *testing.F) {
	for _, s := range []string{"", "engine: vllm", "scrape: {interval: 1s}", "gossip: {join: [a:1]}", "- 1\n- 2", "{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := DecodeConfig(b, DefaultConfig())
		if err == nil {
			_ = cfg.Validate()
		}
	})
}

// TestExampleConfig keeps deploy/sidecar.example.yaml loadable and valid.
func TestExampleConfig(t *testing.T) {
	cfg, err := LoadConfigFile("../deploy/sidecar.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := DefaultConfig()
	want.Listen, want.Admin = "0.0.0.0:8100", "0.0.0.0:9100"
	want.KVEvents.Endpoint, want.KVEvents.ReplayEndpoint = "tcp://127.0.0.1:5557", "tcp://127.0.0.1:6557"
	want.Gossip.Bind = "0.0.0.0:7946"
	want.Gossip.Join = []string{"inferrail-balancer-0.inferrail-balancer:7946"}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("example differs from the defaults beyond its marked examples (-want +got):\n%s", diff)
	}
}

// TestLlamaCppTakesNoEventsEndpoint: llama.cpp publishes no KV events, so an
// events endpoint with --engine llamacpp is a mistake reported by path.
func TestLlamaCppTakesNoEventsEndpoint(t *testing.T) {
	c := DefaultConfig()
	c.Engine = EngineLlamaCpp
	if err := c.Validate(); err != nil {
		t.Fatalf("engine llamacpp without events: %v", err)
	}
	c.KVEvents.Endpoint = "tcp://127.0.0.1:5557"
	err := c.Validate()
	want := `kv_events.endpoint must be empty with engine llamacpp (llama.cpp publishes no KV events), got "tcp://127.0.0.1:5557"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Validate = %v, want %q", err, want)
	}
}
