package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/inferrail/inferrail/internal/devfleet"
)

func init() {
	register(command{name: "dev", summary: "run a whole local fleet: simulators, sidecars, balancers, gossip", run: runDev})
}

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := devConfig(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return devfleet.Run(ctx, cfg, log, func(f *devfleet.Cluster) {
		printFleet(stdout, f)
		if cfg.ExactState {
			fmt.Fprintln(stdout, "\nexact-state oracle: tight gossip and summary settings (docs/dev-fleet.md); not a production setting.")
		}
		fmt.Fprintln(stdout, "\nCtrl-C stops the fleet.")
	})
}

// devConfig parses the dev flags into a fleet config.
func devConfig(args []string, stderr io.Writer) (devfleet.Config, error) {
	cfg := devfleet.DefaultConfig()
	fs := newFlagSet("dev", "[--replicas N] [--balancers B] [--port 8080] [flags]", stderr)
	fs.IntVar(&cfg.Replicas, "replicas", cfg.Replicas, "number of simulated engines, each with a sidecar")
	fs.IntVar(&cfg.Balancers, "balancers", cfg.Balancers, "number of balancers (balancer i listens on port+i)")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "first balancer's client port (0 picks free ports)")
	fs.StringVar(&cfg.Policy, "policy", cfg.Policy, "routing policy: round_robin, random, least_request, p2c, prefix_hash, kv_aware, cost_model (or a peer baseline for comparisons: sglang_cache_aware, dynamo_kv, llm_d)")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "served model name")
	fs.IntVar(&cfg.CacheBlocks, "num-gpu-blocks", cfg.CacheBlocks, "KV blocks per simulator (0: the simulator's default)")
	fs.BoolVar(&cfg.ZeroLatency, "zero-latency", cfg.ZeroLatency, "simulator steps take no time")
	fs.DurationVar(&cfg.OverlayTTL, "overlay-ttl", cfg.OverlayTTL, "balancers' memory of their own placements (0: the policy's default, 10s; negative: none)")
	fs.BoolVar(&cfg.ExactState, "exact-state", cfg.ExactState, "exact-state oracle: tiny bloom false-positive rate, load and summary deltas every 5ms (a benchmark reference, not a production setting; docs/dev-fleet.md)")
	fs.BoolVar(&cfg.Profiling, "profiling", cfg.Profiling, "serve Go's runtime profiles (/debug/pprof/) on every balancer's and sidecar's admin port")
	fs.BoolVar(&cfg.ResponseCache, "response-cache", cfg.ResponseCache, "balancers answer repeated questions from their exact and semantic response caches (embeddings from the first simulator)")
	fs.StringVar(&cfg.LogDir, "log-dir", "", "directory for the children's logs (default: a temporary directory)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "children's log level")
	routing := fs.String("routing", "", "file with the balancers' models[].routing keys but policy and seed, e.g. shed_delay: 1500ms (default: the defaults)")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	if *routing != "" {
		rc, err := readRouting(*routing)
		if err != nil {
			return cfg, err
		}
		// One policy: a key it does not read (shed_delay but for
		// cost_model) is an error here, not dropped as for a comparison.
		withPolicy := rc
		withPolicy.Policy = cfg.Policy
		if err := withPolicy.Validate(); err != nil {
			return cfg, fmt.Errorf("--routing %s with --policy %s: %w", *routing, cfg.Policy, err)
		}
		cfg.Routing = &rc
	}
	return cfg, nil
}

// printFleet prints the client URLs and every admin URL of f.
func printFleet(w io.Writer, f *devfleet.Cluster) {
	fmt.Fprintln(w, "inferrail dev fleet ready")
	fmt.Fprintln(w, "\nclient URLs (OpenAI API):")
	for i, b := range f.Balancers {
		fmt.Fprintf(w, "  balancer-%d  %s/v1/chat/completions\n", i, b.URL)
	}
	fmt.Fprintln(w, "\nweb UI (fleet, gossip, hit rate and TTFT, live decisions, explain; docs/ui.md):")
	for i, b := range f.Balancers {
		fmt.Fprintf(w, "  balancer-%d  %s/ui/\n", i, b.Admin)
	}
	for _, r := range f.Replicas {
		fmt.Fprintf(w, "  %s   %s/ui/\n", r.Name, r.SidecarAdmin)
	}
	fmt.Fprintln(w, "\nadmin URLs:")
	for i, b := range f.Balancers {
		fmt.Fprintf(w, "  balancer-%d  %s  (/metrics /healthz /v1/gossip/members /v1/gossip/state /v1/replicas /debug/decisions, POST /v1/explain)\n", i, b.Admin)
	}
	for _, r := range f.Replicas {
		fmt.Fprintf(w, "  %s   sidecar %s  engine %s  (engine /metrics, /inferrail/debug/kv_cache)\n", r.Name, r.SidecarAdmin, r.EngineURL)
	}
	fmt.Fprintf(w, "\nlogs: %s\n", f.LogDir())
}
