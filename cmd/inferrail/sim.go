package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/inferrail/inferrail/internal/enginesim"
)

func init() {
	register(command{name: "sim", summary: "run a vLLM-compatible engine simulator", run: runSim})
}

// stringList is a repeatable flag whose values may also be comma-separated.
type stringList struct {
	vals []string
	set  bool
}

func (s *stringList) String() string { return strings.Join(s.vals, ",") }

func (s *stringList) Set(v string) error {
	if !s.set {
		s.vals, s.set = nil, true
	}
	s.vals = append(s.vals, splitList(v)...)
	return nil
}

func runSim(ctx context.Context, args []string, _, stderr io.Writer) error {
	cfg := enginesim.DefaultConfig()
	fs := newFlagSet("sim", "[flags]", stderr)
	fs.StringVar(&cfg.Host, "host", cfg.Host, "address to listen on")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "port to listen on (0 picks a free port)")
	names := &stringList{vals: cfg.ServedModelName}
	fs.Var(names, "served-model-name", "model name(s) served; repeat or comma-separate for aliases (the first is used in responses)")
	loras := &stringList{}
	fs.Var(loras, "lora-modules", "LoRA adapters served beside the base model, name=path (repeat or comma-separate)")
	fs.StringVar(&cfg.Tokenizer, "tokenizer", cfg.Tokenizer, `tokenizer: "builtin:sim" or a model directory (tokenizer.json, tokenizer_config.json)`)
	fs.StringVar(&cfg.ChatTemplate, "chat-template", "", "chat template overriding the model's: a file, or the template text")
	e := &cfg.Engine
	fs.IntVar(&e.BlockSize, "block-size", e.BlockSize, "KV block size in tokens")
	fs.IntVar(&e.NumGPUBlocks, "num-gpu-blocks-override", e.NumGPUBlocks, "number of KV blocks (including vLLM's reserved null block)")
	fs.IntVar(&e.MaxNumSeqs, "max-num-seqs", e.MaxNumSeqs, "maximum running sequences per engine")
	fs.IntVar(&e.MaxNumBatchedTokens, "max-num-batched-tokens", e.MaxNumBatchedTokens, "token budget of one step (chunked prefill)")
	fs.IntVar(&e.MaxModelLen, "max-model-len", e.MaxModelLen, "maximum prompt plus output tokens")
	fs.BoolVar(&cfg.EnablePromptTokensDetails, "enable-prompt-tokens-details", false, "report usage.prompt_tokens_details.cached_tokens")
	fs.BoolVar(&cfg.EnableRequestIDHeaders, "enable-request-id-headers", false, "add an X-Request-Id response header")
	fs.StringVar(&cfg.KVEventsConfig, "kv-events-config", "", `vLLM's KV-events JSON, e.g. {"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557"}`)
	fs.IntVar(&cfg.DataParallelSize, "data-parallel-size", cfg.DataParallelSize, "number of engine cores (data-parallel ranks)")
	fs.BoolVar(&e.ZeroLatency, "zero-latency", false, "steps take no time (overhead benchmarks, functional tests)")
	fs.StringVar(&cfg.MetricsFlavor, "metrics-flavor", cfg.MetricsFlavor, `metrics page to imitate: "vllm" or "sglang"`)
	fs.StringVar(&cfg.KVEventsFormat, "kv-events-format", cfg.KVEventsFormat, `KV-event encoding: "map" (vLLM v0.24+), "array" (v0.22-v0.23) or "array-v0.10"`)
	lat := &e.Latency
	fs.DurationVar(&lat.StepOverhead, "step-overhead", lat.StepOverhead, "T0: fixed cost of a step")
	fs.DurationVar(&lat.WeightFloor, "weight-floor", lat.WeightFloor, "W_floor: minimum weight-read time of a step")
	fs.Float64Var(&lat.LinearTokPerSec, "linear-tokens-per-second", lat.LinearTokPerSec, "R_lin: GEMM throughput in tokens per second")
	fs.Float64Var(&lat.AttentionPerPairNS, "attention-ns-per-pair", lat.AttentionPerPairNS, "A_att: nanoseconds per causal query-key pair")
	kvUS := lat.KVReadPerTokenNS / 1000
	fs.Float64Var(&kvUS, "kv-read-us-per-token", kvUS, "A_kv: microseconds per context token per decode step")
	fs.DurationVar(&lat.RequestOverhead, "request-overhead", lat.RequestOverhead, "T_req: API and tokenization time before a request is scheduled")
	faults := fs.String("faults", "", `faults in force from the start, a JSON array, e.g. [{"kind":"status","status":503,"count":2}]`)
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg.ServedModelName = names.vals
	for _, v := range loras.vals {
		name, path, _ := strings.Cut(v, "=")
		if name == "" {
			return fmt.Errorf("--lora-modules: %q has no adapter name (want name=path)", v)
		}
		if path == "" {
			path = name
		}
		cfg.LoRAModules = append(cfg.LoRAModules, enginesim.LoRAModule{Name: name, Path: path})
	}
	lat.KVReadPerTokenNS = kvUS * 1000
	log, err := levelLogger(*logLevel, stderr)
	if err != nil {
		return err
	}
	if cfg.Faults, err = enginesim.ParseFaults(*faults); err != nil {
		return fmt.Errorf("--faults: %w", err)
	}
	return enginesim.Run(ctx, cfg, log)
}
