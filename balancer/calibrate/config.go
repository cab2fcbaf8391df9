package calibrate

import (
	"errors"
	"fmt"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
)

// Config configures one calibration run. Start from DefaultConfig.
type Config struct {
	// Engine is the engine's base URL (http://host:port, optionally with a
	// path prefix in front of /v1).
	Engine string
	// Model is the model to probe ("": the only, or first, model the engine
	// lists on /v1/models).
	Model string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// MaxDuration bounds the whole run: discovery, probes and fit. Rounds
	// that would not finish in time are not started.
	MaxDuration time.Duration
	// Repetitions is how many rounds of the probe plan to run at most; each
	// probe's fastest repetition is fitted (docs/calibrate.md).
	Repetitions int
	// StepTokenBudget is the engine's step token budget (vLLM
	// --max-num-batched-tokens, SGLang --chunked-prefill-size): engines do
	// not report it, and it decides how a long prompt is cut into steps.
	StepTokenBudget int
	// RequestTimeout bounds one probe request.
	RequestTimeout time.Duration
	// Seed seeds the probe prompts (0: from the clock, so a second run does
	// not hit the cache of the first).
	Seed uint64
	// Prior supplies the constants the probes cannot identify and the keys
	// that are not engine constants (decode_context_tokens,
	// queued_prompt_tokens, hot_prefix_queue_wait, miss_penalty).
	Prior route.CostConfig
}

// DefaultConfig returns a 60-second, three-repetition run with the
// Llama-3.1-8B/H100 defaults as the prior and vLLM's 8192-token budget.
func DefaultConfig() Config {
	return Config{
		MaxDuration:     time.Minute,
		Repetitions:     3,
		StepTokenBudget: 8192,
		RequestTimeout:  30 * time.Second,
		Prior:           route.DefaultCostConfig(),
	}
}

// Validate reports every problem at once, each with its flag name and value.
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, args ...any) { errs = append(errs, fmt.Errorf(f, args...)) }
	if c.Engine == "" {
		bad("--engine is required")
	} else if _, err := newEngineClient(c.Engine, ""); err != nil {
		bad("--engine: %v", err)
	}
	if c.MaxDuration < 5*time.Second {
		bad("--max-duration must be >= 5s, got %v", c.MaxDuration)
	}
	if c.Repetitions < 1 || c.Repetitions > 100 {
		bad("--repetitions must be in [1, 100], got %d", c.Repetitions)
	}
	if c.StepTokenBudget < 16 {
		bad("--step-token-budget must be >= 16, got %d", c.StepTokenBudget)
	}
	if c.RequestTimeout <= 0 {
		bad("--request-timeout must be > 0, got %v", c.RequestTimeout)
	}
	rc := route.DefaultConfig()
	rc.Cost = c.Prior
	if err := rc.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("prior: %w", err))
	}
	return errors.Join(errs...)
}
