package enginesim

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/inferrail/inferrail/internal/enginesim/kvevents"
)

// TokenizerBuiltinSim names the builtin:sim tokenizer (internal/tokenize/simtok).
const TokenizerBuiltinSim = "builtin:sim"

// Config configures the whole simulator behind `inferrail sim`: the HTTP
// front end, DataParallelSize engine cores and their KV-event publishers.
// Field names follow vLLM's flags; each field's doc names its flag.
type Config struct {
	// Host is the address to listen on (--host).
	Host string
	// Port is the port to listen on (--port); 0 picks a free port.
	Port int
	// ServedModelName lists the names the model answers to
	// (--served-model-name, several allowed as in vLLM). The first is the
	// name in responses and metrics.
	ServedModelName []string
	// LoRAModules lists the LoRA adapters served beside the base model
	// (--lora-modules name=path, as vLLM takes them): requests naming one
	// are hashed and reported in KV events with the adapter, and
	// /v1/models lists each with the base model as its parent. The
	// simulator generates the same tokens for an adapter as for the base.
	LoRAModules []LoRAModule
	// Tokenizer is "builtin:sim" or a model directory with tokenizer.json
	// and tokenizer_config.json (--tokenizer).
	Tokenizer string
	// ChatTemplate overrides the model's chat template: a file, or the
	// template text itself (--chat-template).
	ChatTemplate string
	// EnablePromptTokensDetails reports usage.prompt_tokens_details.cached_tokens
	// (--enable-prompt-tokens-details).
	EnablePromptTokensDetails bool
	// EnableRequestIDHeaders adds an X-Request-Id response header
	// (--enable-request-id-headers).
	EnableRequestIDHeaders bool
	// KVEventsConfig is vLLM's --kv-events-config JSON ("" disables events).
	KVEventsConfig string
	// KVEventsFormat is the KV-event payload encoding: "map" (vLLM v0.24+),
	// "array" (v0.22–v0.23) or "array-v0.10" (--kv-events-format).
	KVEventsFormat string
	// DataParallelSize is the number of engine cores (--data-parallel-size).
	DataParallelSize int
	// MetricsFlavor is "vllm" or "sglang" (--metrics-flavor).
	MetricsFlavor string
	// Engine configures each engine core; Model and Rank are filled in per rank.
	Engine EngineConfig
	// Faults are injected from the start (--faults, a JSON array of FaultSpec).
	Faults []FaultSpec
	// MaxBodyBytes caps a request body (default 32 MiB).
	MaxBodyBytes int64
	// ShutdownTimeout bounds the graceful shutdown (default 10 s).
	ShutdownTimeout time.Duration
	// Version is reported by GET /version (default DefaultVersion).
	Version string
	// OnListening, if set, is called with the bound address (host:port) once
	// Run's port is open; useful with Port 0. Not a flag.
	OnListening func(addr string)
}

// DefaultVersion is the vLLM version the simulator reports on GET /version.
const DefaultVersion = "0.25.1+inferrail.sim"

// DefaultConfig returns the simulator defaults: vLLM's defaults for
// Llama-3.1-8B on one H100, served as "sim-model" on 127.0.0.1:8000.
func DefaultConfig() Config {
	return Config{
		Host:             "127.0.0.1",
		Port:             8000,
		ServedModelName:  []string{"sim-model"},
		Tokenizer:        TokenizerBuiltinSim,
		KVEventsFormat:   "map",
		DataParallelSize: 1,
		MetricsFlavor:    FlavorVLLM,
		Engine:           DefaultEngineConfig(),
		MaxBodyBytes:     32 << 20,
		ShutdownTimeout:  10 * time.Second,
		Version:          DefaultVersion,
	}
}

// Validate reports every problem at once, each naming its flag and value.
func (c Config) Validate() error {
	var errs []error
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port must be in [0, 65535], got %d", c.Port))
	}
	if len(c.ServedModelName) == 0 {
		errs = append(errs, errors.New("--served-model-name must name at least one model, got none"))
	}
	for _, n := range c.ServedModelName {
		if strings.TrimSpace(n) == "" {
			errs = append(errs, fmt.Errorf("--served-model-name must not be empty, got %q", n))
		}
	}
	for i, l := range c.LoRAModules {
		if slices.Contains(c.ServedModelName, l.Name) || slices.ContainsFunc(c.LoRAModules[:i], func(o LoRAModule) bool { return o.Name == l.Name }) {
			errs = append(errs, fmt.Errorf("--lora-modules names must be unique and not a served model name, got %q twice", l.Name))
		}
	}
	if c.Tokenizer != TokenizerBuiltinSim {
		if st, err := os.Stat(c.Tokenizer); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("--tokenizer must be %q or a model directory, got %q", TokenizerBuiltinSim, c.Tokenizer))
		}
	}
	switch c.KVEventsFormat {
	case "map", "array", "array-v0.10":
	default:
		errs = append(errs, fmt.Errorf("--kv-events-format must be \"map\", \"array\" or \"array-v0.10\", got %q", c.KVEventsFormat))
	}
	if c.DataParallelSize < 1 {
		errs = append(errs, fmt.Errorf("--data-parallel-size must be >= 1, got %d", c.DataParallelSize))
	}
	if c.MetricsFlavor != FlavorVLLM && c.MetricsFlavor != FlavorSGLang {
		errs = append(errs, fmt.Errorf("--metrics-flavor must be %q or %q, got %q", FlavorVLLM, FlavorSGLang, c.MetricsFlavor))
	}
	if err := c.Engine.Validate(); err != nil {
		// Name the flags, not the struct fields.
		errs = append(errs, errors.New(engineFlagNames.Replace(err.Error())))
	}
	if c.KVEventsConfig != "" {
		if _, err := kvevents.ParseConfig(c.KVEventsConfig); err != nil {
			errs = append(errs, fmt.Errorf("--kv-events-config: %w", err))
		}
	}
	for i, f := range c.Faults {
		if err := f.validate(); err != nil {
			errs = append(errs, fmt.Errorf("--faults[%d]: %w", i, err))
		}
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("max body bytes must be > 0, got %d", c.MaxBodyBytes))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("shutdown timeout must be > 0, got %s", c.ShutdownTimeout))
	}
	return errors.Join(errs...)
}

// engineFlagNames maps EngineConfig's field paths in its errors to flags.
var engineFlagNames = strings.NewReplacer(
	"engine.block_size", "--block-size",
	"engine.num_gpu_blocks", "--num-gpu-blocks-override",
	"engine.max_num_seqs", "--max-num-seqs",
	"engine.max_num_batched_tokens", "--max-num-batched-tokens",
	"engine.max_model_len", "--max-model-len",
	"engine.latency.step_overhead", "--step-overhead",
	"engine.latency.weight_floor", "--weight-floor",
	"engine.latency.linear_tok_per_sec", "--linear-tokens-per-second",
	"engine.latency.attention_per_pair_ns", "--attention-ns-per-pair",
	"engine.latency.kv_read_per_token_ns", "--kv-read-us-per-token",
	"engine.latency.request_overhead", "--request-overhead",
)

// modelName is the name used in responses and metrics.
func (c Config) modelName() string {
	if len(c.ServedModelName) == 0 {
		return ""
	}
	return c.ServedModelName[0]
}

// LoRAModule is one LoRA adapter: its name and the path it was loaded from.
type LoRAModule struct {
	Name, Path string
}
