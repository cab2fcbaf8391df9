package enginesim

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric flavors accepted by NewMetrics.
const (
	FlavorVLLM   = "vllm"
	FlavorSGLang = "sglang"
)

// Metrics holds an engine's Prometheus families in vLLM's or SGLang's names,
// labels and buckets. It is registered once and shared by every engine of a
// process; each engine's series carry its rank (vLLM label engine="<rank>",
// SGLang label dp_rank="<rank>").
type Metrics struct {
	flavor string
	model  string
	reg    prometheus.Registerer

	vllm   *vllmMetrics
	sglang *sglangMetrics

	once    sync.Once // registers the families that depend on EngineConfig
	onceErr error
}

// NewMetrics registers the families of flavor ("vllm" or "sglang") for the
// served model name on reg.
func NewMetrics(reg prometheus.Registerer, flavor, model string) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("new metrics: nil registerer")
	}
	m := &Metrics{flavor: flavor, model: model, reg: reg}
	var err error
	switch flavor {
	case FlavorVLLM:
		m.vllm, err = newVLLMMetrics(reg)
	case FlavorSGLang:
		m.sglang, err = newSGLangMetrics(reg)
	default:
		return nil, fmt.Errorf("new metrics: flavor must be %q or %q, got %q", FlavorVLLM, FlavorSGLang, flavor)
	}
	if err != nil {
		return nil, fmt.Errorf("new metrics: %w", err)
	}
	return m, nil
}

// bind returns the observers of one engine, labelled with cfg.Model (or the
// model given to NewMetrics when cfg.Model is empty) and cfg.Rank. Families
// whose buckets depend on the engine's configuration are registered on the
// first call.
func (m *Metrics) bind(cfg EngineConfig) (rankMetrics, error) {
	model := m.model
	if cfg.Model != "" {
		model = cfg.Model
	}
	if m.vllm != nil {
		m.once.Do(func() { m.onceErr = m.vllm.registerLenHistograms(m.reg, cfg.MaxModelLen) })
		if m.onceErr != nil {
			return nil, m.onceErr
		}
		return m.vllm.bind(model, cfg), nil
	}
	return m.sglang.bind(model, cfg), nil
}

// rankMetrics is what the engine reports, already bound to its rank. Calls
// happen under the engine's lock.
type rankMetrics interface {
	// state sets the scheduler gauges.
	state(running, waiting int, kvUsage float64)
	// admitted counts a prefix-cache lookup of queries tokens with hits cached.
	admitted(queries, hits int)
	// preempted counts preemptions.
	preempted(n int)
	// step counts a step's scheduled and generated tokens.
	step(tokens, generated int)
	// firstToken observes a sequence's first token; cachedTokens is its
	// prefix hit.
	firstToken(promptTokens, cachedTokens int, ttft time.Duration)
	// interToken observes the gap before a later token.
	interToken(itl time.Duration)
	// finished observes a finished (or aborted) sequence.
	finished(f finishStats)
}

// finishStats describes a finished sequence; durations are on the virtual
// timeline.
type finishStats struct {
	reason                     string
	prompt, generation, cached int
	e2e                        time.Duration
	hasTimes                   bool // the sequence produced a token; the fields below are set
	queue, prefill             time.Duration
	decode, inference          time.Duration
}

type noopMetrics struct{}

func (noopMetrics) state(int, int, float64)            {}
func (noopMetrics) admitted(int, int)                  {}
func (noopMetrics) preempted(int)                      {}
func (noopMetrics) step(int, int)                      {}
func (noopMetrics) firstToken(int, int, time.Duration) {}
func (noopMetrics) interToken(time.Duration)           {}
func (noopMetrics) finished(finishStats)               {}

// register registers c on reg, or reuses the collector already registered
// under the same description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// buckets125 returns vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, ... <= max.
func buckets125(maxValue int) []float64 {
	var b []float64
	for exp := 1; ; exp *= 10 {
		for _, m := range []int{1, 2, 5} {
			v := m * exp
			if v > maxValue {
				return b
			}
			b = append(b, float64(v))
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
