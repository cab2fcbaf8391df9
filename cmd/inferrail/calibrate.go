package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/inferrail/inferrail/balancer/calibrate"
)

func init() {
	register(command{name: "calibrate", summary: "fit the cost model to an engine; print its cost_model config block", run: runCalibrate})
}

func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := calibrate.DefaultConfig()
	fs := newFlagSet("calibrate", "--engine URL [flags]", stderr)
	fs.StringVar(&cfg.Engine, "engine", "", "the engine's base URL (OpenAI-compatible: vLLM, SGLang, inferrail sim); it must be idle")
	fs.StringVar(&cfg.Model, "model", "", "model to probe (default: the first on /v1/models)")
	fs.StringVar(&cfg.APIKey, "api-key", "", "bearer token for the engine (default: $INFERRAIL_ENGINE_API_KEY)")
	fs.DurationVar(&cfg.MaxDuration, "max-duration", cfg.MaxDuration, "bound on the whole run")
	fs.IntVar(&cfg.Repetitions, "repetitions", cfg.Repetitions, "rounds of the probe plan (each probe's fastest is fitted)")
	fs.IntVar(&cfg.StepTokenBudget, "step-token-budget", cfg.StepTokenBudget, "the engine's step token budget (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size)")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", cfg.RequestTimeout, "bound on one probe request")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the probe prompts (0: from the clock)")
	out := fs.String("out", "", "also write the cost_model block to this file")
	quiet := fs.Bool("quiet", false, "do not print the probe table on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("INFERRAIL_ENGINE_API_KEY")
	}
	if cfg.Engine == "" {
		fmt.Fprintln(stderr, "calibrate: --engine is required")
		fs.Usage()
		return errUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	res, err := calibrate.Run(ctx, cfg, log)
	if err != nil {
		return err
	}
	if !*quiet {
		if err := res.WriteReport(stderr); err != nil {
			return err
		}
	}
	var sb strings.Builder
	if err := res.WriteYAML(&sb); err != nil {
		return err
	}
	if *out != "" {
		if err := os.WriteFile(*out, []byte(sb.String()), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	_, err = io.WriteString(stdout, sb.String())
	return err
}
