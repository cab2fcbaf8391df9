package sidecar

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/tracing"
	"github.com/inferrail/inferrail/internal/yamlconf"
	"github.com/inferrail/inferrail/sidecar/engine/zmqsub"
)

// Engine kinds accepted by Config.Engine.
const (
	EngineAuto     = "auto"
	EngineVLLM     = "vllm"
	EngineSGLang   = "sglang"
	EngineLlamaCpp = "llamacpp"
)

// TokenizerSim names the builtin:sim tokenizer (internal/tokenize/simtok).
const TokenizerSim = "builtin:sim"

// Config is the whole sidecar configuration. Start from DefaultConfig, decode
// a file over it (LoadConfigFile), apply flags and the environment
// (ApplyEnv), then call Validate.
type Config struct {
	// EngineURL is the engine's base URL (http://127.0.0.1:8000).
	EngineURL string `yaml:"engine_url"`
	// Engine is the engine kind: auto (detected from the metrics page), vllm,
	// sglang or llamacpp (llama.cpp's llama-server, started with --metrics).
	Engine string `yaml:"engine"`
	// Model is the served model name that seeds the block-hash chain. Empty
	// means ask the engine (GET /v1/models, first model).
	Model string `yaml:"model"`
	// Tokenizer tokenizes data-path prompts for the approximate block set and
	// the prompt-token counts: "builtin:sim", a Hugging Face model directory
	// (tokenizer.json, tokenizer_config.json, chat template), or "" (none:
	// prompts are counted as untokenized and token counts are estimated from
	// their length).
	Tokenizer string `yaml:"tokenizer"`
	// BlockSize is the engine's KV block size in tokens, used until the
	// engine's cache_config_info reports it.
	BlockSize int `yaml:"block_size"`
	// Listen is the data-path address (h2c + HTTP/1.1).
	Listen string `yaml:"listen"`
	// Admin is the admin address (/metrics, /healthz, /v1/gossip/*, /v1/summary).
	Admin string `yaml:"admin"`
	// ShutdownTimeout bounds the drain of in-flight requests on shutdown.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`

	KVEvents KVEventsConfig `yaml:"kv_events"`
	Scrape   ScrapeConfig   `yaml:"scrape"`
	Proxy    ProxyConfig    `yaml:"proxy"`
	Summary  SummaryConfig  `yaml:"summary"`
	Gossip   GossipConfig   `yaml:"gossip"`
	// Observability configures OpenTelemetry traces.
	Observability ObservabilityConfig `yaml:"observability"`
}

// KVEventsConfig says where the engine publishes its KV-cache events.
type KVEventsConfig struct {
	// Endpoint is the PUB endpoint of data-parallel rank 0
	// (tcp://127.0.0.1:5557); rank r uses port + r. Empty disables events:
	// the sidecar keeps an approximate block set instead.
	Endpoint string `yaml:"endpoint"`
	// ReplayEndpoint is the ROUTER replay endpoint of rank 0, or empty.
	ReplayEndpoint string `yaml:"replay_endpoint"`
	// Topic is the topic filter (prefix of the first frame).
	Topic string `yaml:"topic"`
	// DataParallelSize is the number of ranks to subscribe to.
	DataParallelSize int `yaml:"data_parallel_size"`
	// SilentGrace is how long the data path may carry traffic without a
	// single event batch arriving before the engine is declared silent and
	// the approximate set takes over.
	SilentGrace time.Duration `yaml:"silent_grace"`
	// MaxMessageBytes bounds one message read from the engine's PUB and
	// replay sockets; a peer that declares a larger one is disconnected
	// before anything is allocated (docs/adr/0010-zmtp-frame-limit.md).
	MaxMessageBytes int64 `yaml:"max_message_bytes"`
}

// ScrapeConfig bounds the engine metrics scrape.
type ScrapeConfig struct {
	// Path is the metrics path on the engine (/metrics).
	Path string `yaml:"path"`
	// Interval between scrapes (100ms); the first scrape waits a random part
	// of it.
	Interval time.Duration `yaml:"interval"`
	// Timeout of one scrape.
	Timeout time.Duration `yaml:"timeout"`
	// MaxBytes is the largest page read; a larger page is unreadable.
	MaxBytes int64 `yaml:"max_bytes"`
}

// ProxyConfig tunes the data path.
type ProxyConfig struct {
	// MaxIdleConnsPerHost is the size of the keep-alive pool to the engine.
	MaxIdleConnsPerHost int `yaml:"max_idle_conns_per_host"`
	// DialTimeout bounds a connect to the engine.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// MaxInspectBytes is the largest request body the sidecar reads to count
	// prompt tokens; a larger body is forwarded unread (streamed) and counted
	// as untokenized.
	MaxInspectBytes int64 `yaml:"max_inspect_bytes"`
}

// SummaryConfig sizes and refreshes the bloom summary.
type SummaryConfig struct {
	// FalsePositiveRate is the target rate of each filter (0.001, the
	// summary package's default: docs/routing.md#false-matches-across-a-fleet).
	FalsePositiveRate float64 `yaml:"false_positive_rate"`
	// Capacity is the number of blocks a filter is sized for; 0 takes the
	// engine's num_gpu_blocks from cache_config_info.
	Capacity int `yaml:"capacity"`
	// RebuildPeriod forces a new epoch this often.
	RebuildPeriod time.Duration `yaml:"rebuild_period"`
	// RebuildRemovedFraction starts a new epoch once removals since the last
	// rebuild pass this fraction of the blocks held.
	RebuildRemovedFraction float64 `yaml:"rebuild_removed_fraction"`
}

// GossipConfig is the sidecar's membership in the gossip: the section every
// role shares (gossip.NodeConfig) and the Kubernetes node. An empty advertise
// address means POD_IP, else the bind address; an empty node name means
// POD_NAME, else the host name and the gossip port (gossip.DefaultNodeName).
// The timings a sidecar uses are the announcement and summary-delta period
// (load_interval, 100ms) and the snapshot rate limit (resync_interval, 1s).
type GossipConfig struct {
	// NodeConfig is the bind and advertise addresses, node name, seeds,
	// key file, cluster label, profile and timings.
	gossip.NodeConfig `yaml:",inline"`
	// KubeNode is the Kubernetes node the pod runs on (NODE_NAME), carried for
	// operators only.
	KubeNode string `yaml:"kube_node"`
}

// DefaultConfig returns the defaults every field starts from.
func DefaultConfig() Config {
	return Config{
		EngineURL:       "http://127.0.0.1:8000",
		Engine:          EngineAuto,
		BlockSize:       16,
		Listen:          "127.0.0.1:8100",
		Admin:           "127.0.0.1:9100",
		ShutdownTimeout: 30 * time.Second,
		KVEvents: KVEventsConfig{
			DataParallelSize: 1,
			SilentGrace:      10 * time.Second,
			MaxMessageBytes:  zmqsub.DefaultMaxMessageBytes,
		},
		Scrape: ScrapeConfig{
			Path:     "/metrics",
			Interval: 100 * time.Millisecond,
			Timeout:  500 * time.Millisecond,
			MaxBytes: 4 << 20,
		},
		Proxy: ProxyConfig{
			MaxIdleConnsPerHost: 1024,
			DialTimeout:         2 * time.Second,
			MaxInspectBytes:     8 << 20,
		},
		Summary: SummaryConfig{
			FalsePositiveRate:      summary.DefaultConfig().FalsePositiveRate,
			RebuildPeriod:          5 * time.Minute,
			RebuildRemovedFraction: 0.25,
		},
		Gossip: GossipConfig{NodeConfig: gossip.NodeConfig{
			Bind:    "127.0.0.1:7946",
			Profile: "lan",
		}},
		Observability: ObservabilityConfig{Config: tracing.DefaultConfig()},
	}
}

// Validate reports every problem at once, each with its field path and value.
func (c Config) Validate() error {
	var errs []error
	bad := func(path string, v any, why string) {
		errs = append(errs, fmt.Errorf("%s %s, got %q", path, why, fmt.Sprint(v)))
	}
	if u, err := url.Parse(c.EngineURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("engine_url", c.EngineURL, "must be an http:// or https:// URL with a host")
	}
	switch c.Engine {
	case EngineAuto, EngineVLLM, EngineSGLang, EngineLlamaCpp:
	default:
		bad("engine", c.Engine, "must be auto, vllm, sglang or llamacpp")
	}
	if t := c.Tokenizer; strings.HasPrefix(t, "builtin:") && t != TokenizerSim {
		bad("tokenizer", t, `must be "", builtin:sim or a model directory`)
	}
	if c.BlockSize <= 0 || c.BlockSize > 1<<16 {
		bad("block_size", c.BlockSize, "must be in 1..65536")
	}
	if !yamlconf.IsHostPort(c.Listen) {
		bad("listen", c.Listen, "must be host:port")
	}
	if !yamlconf.IsHostPort(c.Admin) {
		bad("admin", c.Admin, "must be host:port")
	}
	if c.Listen != "" && c.Listen == c.Admin && !strings.HasSuffix(c.Listen, ":0") {
		bad("admin", c.Admin, "must differ from listen")
	}
	if c.ShutdownTimeout <= 0 {
		bad("shutdown_timeout", c.ShutdownTimeout, "must be > 0")
	}
	if c.Engine == EngineLlamaCpp && c.KVEvents.Endpoint != "" {
		bad("kv_events.endpoint", c.KVEvents.Endpoint, "must be empty with engine llamacpp (llama.cpp publishes no KV events)")
	}
	if c.KVEvents.Endpoint != "" && !isTCPEndpoint(c.KVEvents.Endpoint) {
		bad("kv_events.endpoint", c.KVEvents.Endpoint, "must be tcp://host:port")
	}
	if c.KVEvents.ReplayEndpoint != "" {
		if !isTCPEndpoint(c.KVEvents.ReplayEndpoint) {
			bad("kv_events.replay_endpoint", c.KVEvents.ReplayEndpoint, "must be tcp://host:port")
		}
		if c.KVEvents.Endpoint == "" {
			bad("kv_events.replay_endpoint", c.KVEvents.ReplayEndpoint, "needs kv_events.endpoint")
		}
	}
	if c.KVEvents.DataParallelSize < 1 || c.KVEvents.DataParallelSize > 1024 {
		bad("kv_events.data_parallel_size", c.KVEvents.DataParallelSize, "must be in 1..1024")
	}
	if c.KVEvents.SilentGrace <= 0 {
		bad("kv_events.silent_grace", c.KVEvents.SilentGrace, "must be > 0")
	}
	if c.KVEvents.MaxMessageBytes < 1<<10 || c.KVEvents.MaxMessageBytes > 1<<30 {
		bad("kv_events.max_message_bytes", c.KVEvents.MaxMessageBytes, "must be in 1024..1073741824")
	}
	if !strings.HasPrefix(c.Scrape.Path, "/") {
		bad("scrape.path", c.Scrape.Path, "must start with /")
	}
	if c.Scrape.Interval < 10*time.Millisecond {
		bad("scrape.interval", c.Scrape.Interval, "must be >= 10ms")
	}
	if c.Scrape.Timeout <= 0 {
		bad("scrape.timeout", c.Scrape.Timeout, "must be > 0")
	}
	if c.Scrape.MaxBytes < 1024 {
		bad("scrape.max_bytes", c.Scrape.MaxBytes, "must be >= 1024")
	}
	if c.Proxy.MaxIdleConnsPerHost < 1 {
		bad("proxy.max_idle_conns_per_host", c.Proxy.MaxIdleConnsPerHost, "must be >= 1")
	}
	if c.Proxy.DialTimeout <= 0 {
		bad("proxy.dial_timeout", c.Proxy.DialTimeout, "must be > 0")
	}
	if c.Proxy.MaxInspectBytes < 0 {
		bad("proxy.max_inspect_bytes", c.Proxy.MaxInspectBytes, "must be >= 0")
	}
	if p := c.Summary.FalsePositiveRate; !(p > 0 && p < 0.5) {
		bad("summary.false_positive_rate", p, "must be in (0, 0.5)")
	}
	if c.Summary.Capacity < 0 {
		bad("summary.capacity", c.Summary.Capacity, "must be >= 0")
	}
	if c.Summary.RebuildPeriod <= 0 {
		bad("summary.rebuild_period", c.Summary.RebuildPeriod, "must be > 0")
	}
	if f := c.Summary.RebuildRemovedFraction; !(f > 0 && f <= 1) {
		bad("summary.rebuild_removed_fraction", f, "must be in (0, 1]")
	}
	if err := c.Gossip.NodeConfig.Validate("gossip"); err != nil {
		errs = append(errs, err)
	}
	if err := c.Observability.Validate("observability"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func isTCPEndpoint(s string) bool {
	rest, ok := strings.CutPrefix(s, "tcp://")
	return ok && yamlconf.IsHostPort(rest)
}
