package enginesim

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SGLang's label names (docs/engines.md#sglang-metrics): scheduler gauges carry the
// parallelism labels (dp_rank always, since one process may host several
// simulated ranks), tokenizer-side counters and histograms only model_name
// and engine_type (one tokenizer serves every rank). Buckets are SGLang's
// defaults (TokenizerMetricsCollector).
var (
	sglangSchedLabels = []string{"model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank", "dp_rank"}
	sglangTokLabels   = []string{"model_name", "engine_type"}

	sglangTTFTBuckets = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	sglangE2EBuckets  = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400,
		600, 1200, 1800, 2400}
	sglangITLBuckets = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040,
		0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000}
)

// sglangMetrics are the SGLang families the simulator models.
type sglangMetrics struct {
	running, queue, tokenUsage, hitRate *prometheus.GaugeVec
	usedTokens, maxTokens, pageSize     *prometheus.GaugeVec

	promptTokens, genTokens, cachedTokens *prometheus.CounterVec
	requests, aborted                     *prometheus.CounterVec

	ttft, itl, e2e *prometheus.HistogramVec
}

func newSGLangMetrics(reg prometheus.Registerer) (*sglangMetrics, error) {
	var errs []error
	gauge := func(name, help string) *prometheus.GaugeVec {
		g, err := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, sglangSchedLabels))
		errs = append(errs, err)
		return g
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		c, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(append([]string{}, sglangTokLabels...), extra...)))
		errs = append(errs, err)
		return c
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		h, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, sglangTokLabels))
		errs = append(errs, err)
		return h
	}
	m := &sglangMetrics{
		running:    gauge("sglang:num_running_reqs", "The number of running requests."),
		queue:      gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue."),
		tokenUsage: gauge("sglang:token_usage", "The token usage."),
		hitRate:    gauge("sglang:cache_hit_rate", "The prefix cache hit rate."),
		usedTokens: gauge("sglang:num_used_tokens", "The number of used tokens."),
		maxTokens:  gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool."),
		pageSize:   gauge("sglang:page_size", "The page size of the KV cache."),

		promptTokens: counter("sglang:prompt_tokens_total", "Number of prefill tokens processed."),
		genTokens:    counter("sglang:generation_tokens_total", "Number of generation tokens processed."),
		cachedTokens: counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", "cache_source"),
		requests:     counter("sglang:num_requests_total", "Number of requests processed."),
		aborted:      counter("sglang:num_aborted_requests_total", "Number of requests aborted."),

		ttft: hist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", sglangTTFTBuckets),
		itl:  hist("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", sglangITLBuckets),
		e2e:  hist("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", sglangE2EBuckets),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// sglangRank is sglangMetrics curried with one engine's labels.
type sglangRank struct {
	running, queue, tokenUsage, hitRate, usedTokens prometheus.Gauge
	promptTokens, genTokens, cachedTokens           prometheus.Counter
	requests, aborted                               prometheus.Counter
	ttft, itl, e2e                                  prometheus.Observer

	kvTokens int
	stepQ    int // prefix lookups of the current step
	stepH    int
}

func (m *sglangMetrics) bind(model string, cfg EngineConfig) *sglangRank {
	sl := prometheus.Labels{"model_name": model, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0",
		"moe_ep_rank": "0", "dp_rank": itoa(cfg.Rank)}
	tl := prometheus.Labels{"model_name": model, "engine_type": "unified"}
	m.maxTokens.With(sl).Set(float64(cfg.kvTokens()))
	m.pageSize.With(sl).Set(float64(cfg.BlockSize))
	return &sglangRank{
		running:      m.running.With(sl),
		queue:        m.queue.With(sl),
		tokenUsage:   m.tokenUsage.With(sl),
		hitRate:      m.hitRate.With(sl),
		usedTokens:   m.usedTokens.With(sl),
		promptTokens: m.promptTokens.With(tl),
		genTokens:    m.genTokens.With(tl),
		cachedTokens: m.cachedTokens.MustCurryWith(tl).WithLabelValues("device"),
		requests:     m.requests.With(tl),
		aborted:      m.aborted.With(tl),
		ttft:         m.ttft.With(tl),
		itl:          m.itl.With(tl),
		e2e:          m.e2e.With(tl),
		kvTokens:     cfg.kvTokens(),
	}
}

func (r *sglangRank) state(running, waiting int, kvUsage float64) {
	r.running.Set(float64(running))
	r.queue.Set(float64(waiting))
	r.tokenUsage.Set(kvUsage)
	r.usedTokens.Set(kvUsage * float64(r.kvTokens))
}

// admitted accumulates the step's prefill-batch hit rate (SGLang reports the
// share of cached tokens in each new prefill batch).
func (r *sglangRank) admitted(queries, hits int) {
	r.stepQ += queries
	r.stepH += hits
}

func (r *sglangRank) preempted(int) {}

func (r *sglangRank) step(_, _ int) {
	if r.stepQ > 0 {
		r.hitRate.Set(float64(r.stepH) / float64(r.stepQ))
	}
	r.stepQ, r.stepH = 0, 0
}

func (r *sglangRank) firstToken(_, _ int, ttft time.Duration) { r.ttft.Observe(ttft.Seconds()) }

func (r *sglangRank) interToken(itl time.Duration) { r.itl.Observe(itl.Seconds()) }

// finished counts tokens and requests when a request ends, as SGLang's
// tokenizer manager does.
func (r *sglangRank) finished(f finishStats) {
	r.promptTokens.Add(float64(f.prompt))
	r.genTokens.Add(float64(f.generation))
	if f.cached > 0 {
		r.cachedTokens.Add(float64(f.cached))
	}
	r.requests.Inc()
	if f.reason == "abort" {
		r.aborted.Inc()
	}
	r.e2e.Observe(f.e2e.Seconds())
}
