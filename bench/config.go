package bench

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// SLO is the service-level objective goodput counts against.
type SLO struct {
	// TTFT is the largest acceptable time to first token.
	TTFT time.Duration `json:"ttft"`
	// TPOT is the largest acceptable time per output token.
	TPOT time.Duration `json:"tpot"`
}

// Met reports whether r was answered within the SLO: its first token within
// TTFT and its tokens at most TPOT apart on average.
func (s SLO) Met(r *Record) bool { return r.OK() && r.TTFT <= s.TTFT && r.TPOT <= s.TPOT }

// Config configures a Runner.
type Config struct {
	// Targets are the base URLs requests go to (…/v1/chat/completions is
	// added); with several (one per balancer), turn t of session s goes to
	// the one a hash of (s, t) picks (targetOf), so requests and a
	// conversation's turns spread over the balancers the way a cloud load
	// balancer would spread them.
	Targets []string `json:"targets"`
	// Model is the model name sent in every request.
	Model string `json:"model"`
	// Label names the run in reports (the policy, "nginx-rr", ...).
	Label string `json:"label"`
	// Warmup excludes requests scheduled before it from the summary.
	Warmup time.Duration `json:"warmup"`
	// RequestTimeout bounds one request, its retries included.
	RequestTimeout time.Duration `json:"request_timeout"`
	// Retries is how many times a request refused before any answer (429
	// or 503: a balancer shedding load, docs/routing.md#shedding) is sent
	// again, after the wait its Retry-After asks for, as OpenAI's client
	// libraries do (two retries by default; retryWait). 0, the default: a
	// refused request fails, and a session ends at its first failed turn.
	// A retried request's TTFT counts from its scheduled send, the waits
	// included.
	Retries int `json:"retries,omitempty"`
	// Drain bounds the wait for sessions still running after the last
	// arrival: after half of it no session starts another turn, and at its
	// end what is unfinished is cancelled and counted as failed.
	Drain time.Duration `json:"drain"`
	// SLO is the goodput objective.
	SLO SLO `json:"slo"`
	// EngineMetrics are the engines' Prometheus pages, scraped before and
	// after the run for their prefix-cache counters (optional).
	EngineMetrics []string `json:"engine_metrics,omitempty"`
	// Replicas is the number of replicas behind the target (for bounds; 0
	// means the number of EngineMetrics pages).
	Replicas int `json:"replicas,omitempty"`
	// BlockSize is the engines' KV block size, for bounds.
	BlockSize int `json:"block_size"`
	// CacheBlocks is one engine's KV capacity in blocks, for bounds.
	CacheBlocks int `json:"cache_blocks"`
}

// DefaultConfig returns the defaults: the SLO of the issue (TTFT <= 2 s, TPOT
// <= 100 ms), a 5 s warm-up and the simulator's model name and block size.
func DefaultConfig() Config {
	return Config{
		Targets:        []string{"http://127.0.0.1:8080"},
		Model:          "sim-model",
		Label:          "run",
		Warmup:         5 * time.Second,
		RequestTimeout: 5 * time.Minute,
		Drain:          2 * time.Minute,
		SLO:            SLO{TTFT: 2 * time.Second, TPOT: 100 * time.Millisecond},
		BlockSize:      16,
		CacheBlocks:    27500,
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, args ...any) { errs = append(errs, fmt.Errorf(f, args...)) }
	if len(c.Targets) == 0 {
		bad("targets must name at least one URL")
	}
	for _, t := range c.Targets {
		if u, err := url.Parse(t); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("targets: %q is not an http(s) URL", t)
		}
	}
	if c.Model == "" {
		bad("model must not be empty")
	}
	if c.Warmup < 0 || c.Drain < 0 {
		bad("warmup and drain must be >= 0, got %v and %v", c.Warmup, c.Drain)
	}
	if c.RequestTimeout <= 0 {
		bad("request_timeout must be > 0, got %v", c.RequestTimeout)
	}
	if c.Retries < 0 || c.Retries > maxRetries {
		bad("retries must be in [0, %d], got %d", maxRetries, c.Retries)
	}
	if c.SLO.TTFT <= 0 || c.SLO.TPOT <= 0 {
		bad("slo.ttft and slo.tpot must be > 0, got %v and %v", c.SLO.TTFT, c.SLO.TPOT)
	}
	if c.BlockSize <= 0 || c.CacheBlocks <= 0 || c.Replicas < 0 {
		bad("block_size and cache_blocks must be > 0 and replicas >= 0, got %d, %d and %d", c.BlockSize, c.CacheBlocks, c.Replicas)
	}
	for _, m := range c.EngineMetrics {
		if u, err := url.Parse(m); err != nil || u.Host == "" {
			bad("engine_metrics: %q is not a URL", m)
		}
	}
	return errors.Join(errs...)
}
