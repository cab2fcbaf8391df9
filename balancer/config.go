package balancer

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/inferrail/inferrail/balancer/decisionlog"
	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/gateway"
	"github.com/inferrail/inferrail/balancer/proxy"
	"github.com/inferrail/inferrail/balancer/respcache"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize"
	"github.com/inferrail/inferrail/internal/tracing"
	"github.com/inferrail/inferrail/internal/yamlconf"
)

// Config is the whole balancer configuration: DefaultConfig, then a YAML
// file decoded over it (LoadConfigFile), then flags, then Validate.
type Config struct {
	// Listen is the client address (HTTP/1.1 and h2c).
	Listen string `yaml:"listen"`
	// Admin is the admin address: /metrics, /healthz, /v1/gossip/*. Never
	// the client port.
	Admin string `yaml:"admin"`
	// MaxBodyBytes caps a request body.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ShutdownTimeout bounds the drain of in-flight requests on shutdown.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// Models configures the models served; a model a gossip replica serves
	// but not listed here is routed with the routing defaults and no
	// tokenizer.
	Models []ModelConfig `yaml:"models"`
	// Replicas lists static replicas (engines or providers without a
	// sidecar).
	Replicas []ReplicaConfig `yaml:"replicas"`
	// Discovery finds replicas in DNS (engines without a sidecar behind a
	// headless Service).
	Discovery DiscoveryConfig `yaml:"discovery"`
	// ReplicaDefaults are the caps of replicas learned from the gossip.
	ReplicaDefaults fleet.ReplicaDefaults `yaml:"replica_defaults"`
	Gossip          GossipConfig          `yaml:"gossip"`
	Routing         RoutingConfig         `yaml:"routing"`
	Health          fleet.HealthConfig    `yaml:"health"`
	Retry           RetryConfig           `yaml:"retry"`
	Timeouts        TimeoutsConfig        `yaml:"timeouts"`
	Tokenize        TokenizeConfig        `yaml:"tokenize"`
	// Gateway holds the auth, rate_limits and cors sections.
	Gateway gateway.Config `yaml:",inline"`
	EPP     EPPConfig      `yaml:"epp"`
	// DecisionLog samples routing decisions into a JSON-lines file and the
	// ring behind GET /debug/decisions and the web UI.
	DecisionLog decisionlog.Config `yaml:"decision_log"`
	// ResponseCache holds the exact and semantic response caches
	// (docs/gateway.md#response-caches).
	ResponseCache respcache.Config `yaml:"response_cache"`
	// Observability configures OpenTelemetry traces.
	Observability ObservabilityConfig `yaml:"observability"`
}

// ModelConfig is one model.
type ModelConfig struct {
	// Name is the model name the replicas serve (and that seeds the block
	// hashes).
	Name string `yaml:"name"`
	// Aliases are other names clients may use; the body's "model" is
	// rewritten to Name.
	Aliases []string `yaml:"aliases"`
	// Tokenizer is "builtin:sim", a model directory, or "" (no prediction).
	Tokenizer string `yaml:"tokenizer"`
	// ChatTemplate overrides the model's chat template (a path or the text).
	ChatTemplate string `yaml:"chat_template"`
	// BlockSize is the engines' KV block size in tokens.
	BlockSize int `yaml:"block_size"`
	// Routing is the model's policy and cost model; policy "" and seed 0
	// take routing.default_policy and routing.seed.
	Routing route.Config `yaml:"routing"`
	// TextPrefix routes the model cache-aware when it has no tokenizer
	// (ignored when Tokenizer is set).
	TextPrefix TextPrefixConfig `yaml:"text_prefix"`
}

// ReplicaConfig is one static replica.
type ReplicaConfig struct {
	// Name identifies the replica (metrics, headers, prefix_hash placement).
	Name string `yaml:"name"`
	// URL is the base URL (http://host:port, optionally with a path prefix).
	URL string `yaml:"url"`
	// H2C reaches the replica over HTTP/2 with prior knowledge.
	H2C bool `yaml:"h2c"`
	// Models lists the model names it serves.
	Models []string `yaml:"models"`
	// MaxConcurrency and MaxPending cap this balancer's requests in flight
	// and waiting for a first byte (0: no cap).
	MaxConcurrency int `yaml:"max_concurrency"`
	MaxPending     int `yaml:"max_pending"`
	// KVCapacityBlocks is the engine's KV capacity in blocks (0: unknown).
	KVCapacityBlocks int `yaml:"kv_capacity_blocks"`
	// BlockSize is its KV block size (0: the model's).
	BlockSize int `yaml:"block_size"`
	// Weight scales its share (0: 1).
	Weight float64 `yaml:"weight"`
	// APIKey is sent upstream as "Authorization: Bearer APIKey" in place of
	// the client's credentials (a hosted provider's key).
	APIKey string `yaml:"api_key"`
	// PathPrefix replaces the leading /v1 of request paths (e.g.
	// /openai/v1 for a provider serving its API there; "": kept).
	PathPrefix string `yaml:"path_prefix"`
	// ProbePath overrides health.probe_path for this replica (e.g.
	// /v1/models for a provider without /health).
	ProbePath string `yaml:"probe_path"`
	// Drain takes the replica out of routing while requests on it finish.
	Drain bool `yaml:"drain"`
}

// DiscoveryConfig finds replicas in DNS (balancer/discovery).
type DiscoveryConfig struct {
	// Resolver is the DNS server asked, host:port ("": the system's, from
	// /etc/resolv.conf).
	Resolver string `yaml:"resolver"`
	// DNS lists the groups of names to resolve.
	DNS []DNSGroupConfig `yaml:"dns"`
}

// DNSGroupConfig is one DNS discovery group: every address its names resolve
// to (A and AAAA records) is a replica named group-IP-port, reached over
// http://IP:port.
type DNSGroupConfig struct {
	// Group names the group (in replica names and metrics).
	Group string `yaml:"group"`
	// Names are the DNS names resolved, e.g. a headless Service's
	// vllm.inference.svc.cluster.local.
	Names []string `yaml:"names"`
	// Port is the engines' port.
	Port int `yaml:"port"`
	// Interval is the time between lookups; Timeout bounds one lookup.
	Interval time.Duration `yaml:"interval"`
	Timeout  time.Duration `yaml:"timeout"`
	// Models lists the model names the replicas serve.
	Models []string `yaml:"models"`
	// H2C, MaxConcurrency, MaxPending, KVCapacityBlocks, BlockSize,
	// Weight and ProbePath are each replica's, as for a static replica.
	H2C              bool    `yaml:"h2c"`
	MaxConcurrency   int     `yaml:"max_concurrency"`
	MaxPending       int     `yaml:"max_pending"`
	KVCapacityBlocks int     `yaml:"kv_capacity_blocks"`
	BlockSize        int     `yaml:"block_size"`
	Weight           float64 `yaml:"weight"`
	ProbePath        string  `yaml:"probe_path"`
}

// minDNSInterval bounds DNSGroupConfig.Interval from below.
const minDNSInterval = 100 * time.Millisecond

// defaultDNSGroup is what each discovery.dns[] entry starts from.
func defaultDNSGroup() DNSGroupConfig {
	return DNSGroupConfig{Interval: 5 * time.Second, Timeout: 2 * time.Second}
}

// validate appends every problem of the discovery section to errs.
func (d *DiscoveryConfig) validate(bad func(string, ...any)) {
	if d.Resolver != "" {
		if _, port, err := net.SplitHostPort(d.Resolver); err != nil || port == "" {
			bad("discovery.resolver must be host:port, got %q", d.Resolver)
		}
	}
	groups := map[string]bool{}
	for i, g := range d.DNS {
		p := fmt.Sprintf("discovery.dns[%d]", i)
		switch {
		case g.Group == "":
			bad("%s.group must not be empty", p)
		case groups[g.Group]:
			bad("%s.group %q is not unique", p, g.Group)
		}
		groups[g.Group] = true
		if len(g.Names) == 0 {
			bad("%s.names must list at least one DNS name", p)
		}
		for j, n := range g.Names {
			if n == "" || strings.ContainsAny(n, ":/ ") {
				bad("%s.names[%d] must be a DNS name, got %q", p, j, n)
			}
		}
		if g.Port < 1 || g.Port > 65535 {
			bad("%s.port must be in [1, 65535], got %d", p, g.Port)
		}
		if g.Interval < minDNSInterval {
			bad("%s.interval must be >= %v, got %v", p, minDNSInterval, g.Interval)
		}
		if g.Timeout <= 0 {
			bad("%s.timeout must be > 0, got %v", p, g.Timeout)
		}
		if len(g.Models) == 0 {
			bad("%s.models must name at least one model", p)
		}
		for j, m := range g.Models {
			if m == "" {
				bad("%s.models[%d] must not be empty", p, j)
			}
		}
		if g.MaxConcurrency < 0 || g.MaxPending < 0 || g.KVCapacityBlocks < 0 || g.BlockSize < 0 {
			bad("%s caps must not be negative, got max_concurrency %d, max_pending %d, kv_capacity_blocks %d, block_size %d",
				p, g.MaxConcurrency, g.MaxPending, g.KVCapacityBlocks, g.BlockSize)
		}
		if !(g.Weight >= 0) || g.Weight > 1e6 {
			bad("%s.weight must be in [0, 1e6], got %v", p, g.Weight)
		}
		if g.ProbePath != "" && g.ProbePath[0] != '/' {
			bad("%s.probe_path must be a path starting with /, got %q", p, g.ProbePath)
		}
	}
}

// GossipConfig configures the balancer's gossip membership: the section
// every role shares (gossip.NodeConfig) and whether to join at all. An empty
// advertise address means the bind address; an empty node name means the
// host name, "-balancer" and the gossip port when the port is fixed, else
// "balancer-" and a random suffix (nodeName).
type GossipConfig struct {
	// Enabled joins the gossip to learn sidecars.
	Enabled bool `yaml:"enabled"`
	// NodeConfig is the bind and advertise addresses, node name, seeds,
	// key file, cluster label, profile and timings.
	gossip.NodeConfig `yaml:",inline"`
	// ShareLoad sends this balancer's own load on each replica to the other
	// balancers as it changes, and counts theirs in place of their shares
	// in the sidecars' reports (default true;
	// docs/routing.md#the-load-model).
	ShareLoad bool `yaml:"share_load"`
}

// RoutingConfig holds the routing defaults.
type RoutingConfig struct {
	// DefaultPolicy is the policy of models that do not name one: one of
	// route.Policies, or for comparisons one of the peer baselines
	// route.Baselines (docs/baselines.md), which are not production policies.
	DefaultPolicy string `yaml:"default_policy"`
	// Seed seeds models that do not set their own.
	Seed uint64 `yaml:"seed"`
}

// RetryConfig bounds retries before the first byte.
type RetryConfig struct {
	// MaxAttempts counts the first attempt (1: no retries).
	MaxAttempts int `yaml:"max_attempts"`
	// BackoffBase is the wait before the second attempt; it doubles per
	// attempt up to BackoffMax.
	BackoffBase time.Duration `yaml:"backoff_base"`
	BackoffMax  time.Duration `yaml:"backoff_max"`
}

// TimeoutsConfig holds the request path's time limits.
type TimeoutsConfig struct {
	// ReadBody bounds reading the request body.
	ReadBody time.Duration `yaml:"read_body"`
	// Route is the one deadline for getting a first byte, across every
	// attempt and backoff.
	Route time.Duration `yaml:"route"`
	// Upstream holds the per-attempt transport limits.
	Upstream proxy.Config `yaml:"upstream"`
}

// TokenizeConfig bounds the CPU spent tokenizing (internal/tokenize.Pool).
type TokenizeConfig struct {
	Workers  int           `yaml:"workers"`
	MaxWait  time.Duration `yaml:"max_wait"`
	MaxQueue int           `yaml:"max_queue"`
	MaxSize  int           `yaml:"max_size"`
}

// EPPConfig configures the endpoint-picker mode: Envoy ext_proc v3 over gRPC
// for a Gateway API InferencePool (docs/epp.md).
type EPPConfig struct {
	// Listen is the gRPC address ("": the mode is off).
	Listen string `yaml:"listen"`
	// Endpoint is which address of a gossip replica is answered: data (the
	// sidecar's data port, so the sidecar still sees every request) or
	// engine (the engine's own port on the same host). It must match the
	// InferencePool's target port. Static replicas answer their URL's
	// host:port either way.
	Endpoint string `yaml:"endpoint"`
	// Fallbacks is how many endpoints follow the pick in the destination
	// list, in the policy's order (0: the pick alone).
	Fallbacks int `yaml:"fallbacks"`
	// BodyMode is the request body mode assumed when the data plane sends
	// no protocol_config: full_duplex_streamed or buffered.
	BodyMode string `yaml:"body_mode"`
}

// EPP endpoint kinds and body modes.
const (
	EPPEndpointData   = "data"
	EPPEndpointEngine = "engine"

	EPPBodyFullDuplex = "full_duplex_streamed"
	EPPBodyBuffered   = "buffered"
)

// DefaultConfig returns the defaults every field starts from.
func DefaultConfig() Config {
	return Config{
		Listen:          "127.0.0.1:8080",
		Admin:           "127.0.0.1:9090",
		MaxBodyBytes:    32 << 20,
		ShutdownTimeout: 30 * time.Second,
		Gossip:          GossipConfig{Enabled: true, ShareLoad: true, NodeConfig: gossip.NodeConfig{Bind: "0.0.0.0:7946", Profile: string(gossip.ProfileLAN)}},
		Routing:         RoutingConfig{DefaultPolicy: route.PolicyCostModel, Seed: 1},
		Health:          fleet.DefaultHealthConfig(),
		Retry:           RetryConfig{MaxAttempts: 3, BackoffBase: 25 * time.Millisecond, BackoffMax: time.Second},
		Timeouts: TimeoutsConfig{
			ReadBody: 30 * time.Second,
			Route:    2 * time.Minute,
			Upstream: proxy.DefaultConfig(),
		},
		Tokenize:      TokenizeConfig{MaxWait: 25 * time.Millisecond, MaxSize: 8 << 20},
		Gateway:       gateway.DefaultConfig(),
		EPP:           EPPConfig{Endpoint: EPPEndpointData, Fallbacks: 2, BodyMode: EPPBodyFullDuplex},
		Observability: ObservabilityConfig{Config: tracing.DefaultConfig()},

		DecisionLog:   decisionlog.DefaultConfig(),
		ResponseCache: respcache.DefaultConfig(),
	}
}

// defaultModel is what each models[] entry starts from.
func defaultModel() ModelConfig {
	rc := route.DefaultConfig()
	rc.Policy, rc.Seed = "", 0
	return ModelConfig{BlockSize: kvblock.DefaultBlockSize, Routing: rc, TextPrefix: defaultTextPrefix()}
}

// routeConfig returns the model's route config with the routing defaults
// filled in.
func (c *Config) routeConfig(m *ModelConfig) route.Config {
	rc := m.Routing
	if rc.Policy == "" {
		rc.Policy = c.Routing.DefaultPolicy
	}
	if rc.Seed == 0 {
		rc.Seed = c.Routing.Seed
	}
	return rc
}

// autoModel is the config of a model served by a gossip replica but not
// listed in models.
func (c *Config) autoModel(name string) ModelConfig {
	m := defaultModel()
	m.Name = name
	m.Routing = c.routeConfig(&m)
	return m
}

// Validate reports every problem at once, each named by its YAML path and
// value.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	checkAddr := func(name, v string) {
		if !yamlconf.IsHostPort(v) {
			bad("%s must be host:port, got %q", name, v)
		}
	}
	checkAddr("listen", c.Listen)
	checkAddr("admin", c.Admin)
	if _, port, _ := net.SplitHostPort(c.Listen); c.Listen == c.Admin && port != "0" {
		bad("admin must differ from listen, got %q for both", c.Admin)
	}
	if c.MaxBodyBytes < 1 {
		bad("max_body_bytes must be >= 1, got %d", c.MaxBodyBytes)
	}
	if c.ShutdownTimeout < 0 {
		bad("shutdown_timeout must be >= 0, got %v", c.ShutdownTimeout)
	}
	names := map[string]string{}
	claim := func(name, path string) {
		if prev, ok := names[name]; ok {
			bad("%s %q is already used by %s", path, name, prev)
			return
		}
		names[name] = path
	}
	for i := range c.Models {
		m := &c.Models[i]
		p := fmt.Sprintf("models[%d]", i)
		if m.Name == "" {
			bad("%s.name must not be empty", p)
		} else {
			claim(m.Name, p+".name")
		}
		for j, a := range m.Aliases {
			if a == "" {
				bad("%s.aliases[%d] must not be empty", p, j)
			} else {
				claim(a, fmt.Sprintf("%s.aliases[%d]", p, j))
			}
		}
		if m.BlockSize < 1 || m.BlockSize > 1<<16 {
			bad("%s.block_size must be in [1, 65536], got %d", p, m.BlockSize)
		}
		errs = append(errs, prefixed(p+".routing.", c.routeConfig(m).Validate())...)
		errs = append(errs, m.TextPrefix.validate(p+".text_prefix")...)
	}
	ids := map[string]bool{}
	for i, r := range c.Replicas {
		p := fmt.Sprintf("replicas[%d]", i)
		if r.Name == "" {
			bad("%s.name must not be empty", p)
		} else if ids[r.Name] {
			bad("%s.name %q is not unique", p, r.Name)
		}
		ids[r.Name] = true
		if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("%s.url must be an http:// or https:// URL, got %q", p, r.URL)
		} else if u.Scheme == "https" && r.H2C {
			bad("%s.h2c needs an http:// url, got %q", p, r.URL)
		}
		if len(r.Models) == 0 {
			bad("%s.models must name at least one model", p)
		}
		for j, m := range r.Models {
			if m == "" {
				bad("%s.models[%d] must not be empty", p, j)
			}
		}
		if r.MaxConcurrency < 0 {
			bad("%s.max_concurrency must be >= 0, got %d", p, r.MaxConcurrency)
		}
		if r.MaxPending < 0 {
			bad("%s.max_pending must be >= 0, got %d", p, r.MaxPending)
		}
		if r.KVCapacityBlocks < 0 {
			bad("%s.kv_capacity_blocks must be >= 0, got %d", p, r.KVCapacityBlocks)
		}
		if r.BlockSize < 0 {
			bad("%s.block_size must be >= 0, got %d", p, r.BlockSize)
		}
		if !(r.Weight >= 0) || r.Weight > 1e6 {
			bad("%s.weight must be in [0, 1e6], got %v", p, r.Weight)
		}
		if r.PathPrefix != "" && (r.PathPrefix[0] != '/' || strings.ContainsAny(r.PathPrefix, "?#")) {
			bad("%s.path_prefix must be a path starting with /, got %q", p, r.PathPrefix)
		}
		if r.ProbePath != "" && r.ProbePath[0] != '/' {
			bad("%s.probe_path must be a path starting with /, got %q", p, r.ProbePath)
		}
	}
	d := c.ReplicaDefaults
	if d.MaxConcurrency < 0 || d.MaxPending < 0 || d.CapacityBlocks < 0 {
		bad("replica_defaults must not be negative, got %+v", d)
	}
	if c.Gossip.Enabled {
		if err := c.Gossip.NodeConfig.Validate("gossip"); err != nil {
			errs = append(errs, err)
		}
	} else {
		if len(c.Replicas) == 0 && len(c.Discovery.DNS) == 0 {
			bad("replicas or discovery.dns must not be empty when gossip.enabled is false")
		}
		if err := c.Gossip.Timings.Validate("gossip"); err != nil {
			errs = append(errs, err)
		}
	}
	c.Discovery.validate(bad)
	if !route.Known(c.Routing.DefaultPolicy) {
		bad("routing.default_policy must be one of %v or the baselines %v, got %q", route.Policies, route.Baselines, c.Routing.DefaultPolicy)
	}
	errs = append(errs, prefixed("", c.Health.Validate("health"))...)
	if c.Retry.MaxAttempts < 1 || c.Retry.MaxAttempts > 100 {
		bad("retry.max_attempts must be in [1, 100], got %d", c.Retry.MaxAttempts)
	}
	if c.Retry.BackoffBase < 0 {
		bad("retry.backoff_base must be >= 0, got %v", c.Retry.BackoffBase)
	}
	if c.Retry.BackoffMax < c.Retry.BackoffBase {
		bad("retry.backoff_max must be >= retry.backoff_base, got %v", c.Retry.BackoffMax)
	}
	if c.Timeouts.ReadBody <= 0 {
		bad("timeouts.read_body must be > 0, got %v", c.Timeouts.ReadBody)
	}
	if c.Timeouts.Route <= 0 {
		bad("timeouts.route must be > 0, got %v", c.Timeouts.Route)
	}
	errs = append(errs, prefixed("", c.Timeouts.Upstream.Validate("timeouts.upstream"))...)
	errs = append(errs, prefixed("", c.Gateway.Validate())...)
	t := c.Tokenize
	if t.Workers < 0 || t.MaxWait < 0 || t.MaxQueue < 0 || t.MaxSize < 0 {
		bad("tokenize fields must not be negative, got %+v", t)
	}
	if e := c.EPP; e.Listen != "" {
		checkAddr("epp.listen", e.Listen)
		for _, other := range []struct{ name, addr string }{{"listen", c.Listen}, {"admin", c.Admin}} {
			if _, port, _ := net.SplitHostPort(e.Listen); e.Listen == other.addr && port != "0" {
				bad("epp.listen must differ from %s, got %q for both", other.name, e.Listen)
			}
		}
	}
	if e := c.EPP; e.Endpoint != EPPEndpointData && e.Endpoint != EPPEndpointEngine {
		bad("epp.endpoint must be %s or %s, got %q", EPPEndpointData, EPPEndpointEngine, e.Endpoint)
	}
	if e := c.EPP; e.Fallbacks < 0 || e.Fallbacks > 16 {
		bad("epp.fallbacks must be in [0, 16], got %d", e.Fallbacks)
	}
	if e := c.EPP; e.BodyMode != EPPBodyFullDuplex && e.BodyMode != EPPBodyBuffered {
		bad("epp.body_mode must be %s or %s, got %q", EPPBodyFullDuplex, EPPBodyBuffered, e.BodyMode)
	}
	errs = append(errs, prefixed("", c.DecisionLog.Validate("decision_log"))...)
	errs = append(errs, prefixed("", c.ResponseCache.Validate("response_cache."))...)
	errs = append(errs, prefixed("", c.Observability.Validate())...)
	return errors.Join(errs...)
}

// prefixed flattens err (joined errors too) and prefixes each message.
func prefixed(prefix string, err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, prefixed(prefix, e)...)
		}
		return out
	}
	if prefix == "" {
		return []error{err}
	}
	return []error{fmt.Errorf("%s%w", prefix, err)}
}

// Preflight does the checks of a config that need the file system: every
// tokenizer loads, the gossip key file and the API keys file read. `inferrail check` runs it
// after Validate so that a config it accepts also starts; every problem is
// reported at once.
func (c *Config) Preflight() error {
	var errs []error
	for i, m := range c.Models {
		if m.Tokenizer == "" {
			continue
		}
		if _, err := tokenize.Load(m.Tokenizer, tokenize.Options{ChatTemplate: m.ChatTemplate, CacheBytes: -1}); err != nil {
			errs = append(errs, fmt.Errorf("models[%d].tokenizer %q: %w", i, m.Tokenizer, err))
		}
	}
	if c.Gossip.Enabled && c.Gossip.KeyFile != "" {
		if _, err := gossip.LoadKeyFile(c.Gossip.KeyFile); err != nil {
			errs = append(errs, fmt.Errorf("gossip.key_file: %w", err))
		}
	}
	if f := c.Gateway.Auth.KeysFile; f != "" {
		if _, err := gateway.LoadKeysFile(f); err != nil {
			errs = append(errs, err)
		}
	}
	if p := c.DecisionLog.Path; p != "" && p != "-" {
		if fi, err := os.Stat(filepath.Dir(p)); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("decision_log.path %q: its directory does not exist", p))
		}
	}
	return errors.Join(errs...)
}
