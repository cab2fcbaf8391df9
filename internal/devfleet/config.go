package devfleet

import (
	"errors"
	"fmt"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
)

// Config describes a local fleet.
type Config struct {
	// Binary is the inferrail binary to run (default: this process's own
	// executable).
	Binary string
	// Replicas is the number of simulators (each with a sidecar).
	Replicas int
	// Balancers is the number of balancers (0: engines and sidecars only,
	// for baselines that front the engines themselves).
	Balancers int
	// Port is the first balancer's client port; balancer i listens on Port+i.
	// 0 picks free ports.
	Port int
	// Model is the served model name.
	Model string
	// Policy is the balancers' routing policy: one of route.Policies, or a
	// peer baseline of route.Baselines (sglang_cache_aware, dynamo_kv,
	// llm_d) for comparisons.
	Policy string
	// Seed seeds the balancers' routing.
	Seed uint64
	// CacheBlocks is each simulator's KV capacity in blocks
	// (--num-gpu-blocks-override); 0 keeps the simulator's default.
	CacheBlocks int
	// BlockSize is the simulators' KV block size.
	BlockSize int
	// ZeroLatency makes simulator steps take no time.
	ZeroLatency bool
	// SimArgs are extra `inferrail sim` flags (latency model).
	SimArgs []string
	// SimLatency, when set, is the simulators' latency model: its engine
	// constants (step_overhead, weight_floor, linear_tok_per_sec,
	// attention_per_pair_ns, kv_read_per_token_ns, request_overhead,
	// step_token_budget) become `inferrail sim` flags; nil keeps the
	// simulator's defaults. ParseSimLatency reads it from a flag.
	SimLatency *route.CostConfig
	// Routing, when set, is the balancers' models[].routing block (e.g. a
	// spread_margin, or the cost_model `inferrail calibrate` printed) but
	// its policy and seed, which Policy and Seed set; nil keeps the
	// defaults. Its shed_delay reaches cost_model fleets only
	// (RouteConfig).
	Routing *route.Config
	// ExactState pushes the fleet's state exchange to its limits so the
	// balancers see (nearly) the engines' true caches and load with no delay:
	// the exact-state oracle of docs/perf-model.md#the-exact-state-oracle. Bloom summaries get a
	// tiny false-positive rate and load and summary deltas are announced
	// every few milliseconds. It costs gossip bandwidth and CPU, so it is a
	// reference for benchmarks, not a production setting.
	ExactState bool
	// NoTokenizer configures the balancers' model without a tokenizer, so
	// they route on the text prefix identity of each request and report
	// estimated token counts (docs/routing.md#text-prefix-identity); the
	// sidecars keep theirs, as their summaries come from the engines' KV
	// events either way.
	NoTokenizer bool
	// OverlayTTL sets how long the balancers remember their own placements
	// (the model's routing.overlay.ttl): 0 keeps the policy's default (10s),
	// a negative value turns the overlay off. The overlay predicts a
	// placement's prompt blocks on its replica whatever the summary says, so
	// under cache pressure it over-predicts blocks evicted since; an
	// exact-state fleet needs it only for the few milliseconds its state
	// takes to arrive and for prefills still running (docs/dev-fleet.md).
	OverlayTTL time.Duration
	// ResponseCache turns on the balancers' exact and semantic response
	// caches (docs/gateway.md#response-caches), embedding with the first
	// simulator's /v1/embeddings, so the whole fleet works offline.
	ResponseCache bool
	// Profiling serves Go's runtime profiles (/debug/pprof/) on every
	// balancer's and sidecar's admin port (their observability.profiling),
	// for CPU profiles of a benchmark run (docs/bench-findings.md, "Four
	// balancers on two cores").
	Profiling bool
	// LogDir receives one log file per process (default: a temporary
	// directory, removed on Stop unless KeepLogs).
	LogDir string
	// KeepLogs keeps a temporary LogDir after Stop.
	KeepLogs bool
	// LogLevel is every child's --log-level.
	LogLevel string
	// ReadyTimeout bounds the wait for the whole fleet to be ready.
	ReadyTimeout time.Duration
	// StopTimeout bounds each child's graceful exit before it is killed.
	StopTimeout time.Duration
}

// DefaultConfig returns a 4-replica, 1-balancer fleet on port 8080 routing
// with cost_model.
func DefaultConfig() Config {
	return Config{
		Replicas:     4,
		Balancers:    1,
		Port:         8080,
		Model:        "sim-model",
		Policy:       "cost_model",
		Seed:         1,
		BlockSize:    16,
		LogLevel:     "warn",
		ReadyTimeout: time.Minute,
		StopTimeout:  15 * time.Second,
	}
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, args ...any) { errs = append(errs, fmt.Errorf(f, args...)) }
	if c.Replicas < 1 || c.Replicas > 64 {
		bad("replicas must be in [1, 64], got %d", c.Replicas)
	}
	if c.Balancers < 0 || c.Balancers > 16 {
		bad("balancers must be in [0, 16], got %d", c.Balancers)
	}
	if c.Port < 0 || c.Port+c.Balancers > 65535 {
		bad("port must be in [0, 65535-balancers], got %d", c.Port)
	}
	if c.Model == "" {
		bad("model must not be empty")
	}
	if !route.Known(c.Policy) {
		bad("policy must be one of %v or the baselines %v, got %q", route.Policies, route.Baselines, c.Policy)
	}
	if c.CacheBlocks < 0 || c.BlockSize <= 0 {
		bad("cache_blocks must be >= 0 and block_size > 0, got %d and %d", c.CacheBlocks, c.BlockSize)
	}
	if c.SimLatency != nil {
		rc := route.DefaultConfig()
		rc.Cost = *c.SimLatency
		if err := rc.Validate(); err != nil {
			bad("sim_latency: %v", err)
		}
	}
	if c.Routing != nil {
		rc := c.RouteConfig()
		if err := rc.Validate(); err != nil {
			bad("routing: %v", err)
		}
	}
	if c.ReadyTimeout <= 0 || c.StopTimeout <= 0 {
		bad("ready_timeout and stop_timeout must be > 0")
	}
	return errors.Join(errs...)
}

// RouteConfig returns the fleet's routing config for its policy: Routing (or
// the defaults) with Policy set. ShedDelay and SLO.TPOT, which only
// cost_model reads, are dropped for the other policies, so one routing file
// serves every policy a comparison runs.
func (c Config) RouteConfig() route.Config {
	rc := route.DefaultConfig()
	if c.Routing != nil {
		rc = *c.Routing
	}
	rc.Policy = c.Policy
	if rc.Policy != route.PolicyCostModel {
		rc.ShedDelay = 0
		rc.SLO.TPOT = 0
	}
	return rc
}
