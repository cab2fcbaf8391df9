package enginesim

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// vLLM's label names and histogram buckets (docs/engines.md#vllm-metrics).
var (
	vllmLabels = []string{"model_name", "engine"}

	vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vllmITLBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	vllmRequestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	vllmIterationBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}

	// vllmFinishReasons are vLLM's FinishReason values, all exported at 0.
	vllmFinishReasons = []string{"stop", "length", "abort", "error", "repetition"}
)

// vllmMetrics are the families of vLLM's PrometheusStatLogger that the
// simulator models.
type vllmMetrics struct {
	running, waiting, kvUsage *prometheus.GaugeVec
	waitingByReason           *prometheus.GaugeVec
	cacheConfig               *prometheus.GaugeVec

	prefixQueries, prefixHits *prometheus.CounterVec
	preemptions               *prometheus.CounterVec
	promptTokens, genTokens   *prometheus.CounterVec
	promptBySource            *prometheus.CounterVec
	promptCached              *prometheus.CounterVec
	success                   *prometheus.CounterVec

	ttft, itl, tpot                       *prometheus.HistogramVec
	e2e, queue, inference, prefill, decod *prometheus.HistogramVec
	iterationTokens                       *prometheus.HistogramVec
	reqPromptTokens, reqGenTokens         *prometheus.HistogramVec // registered by registerLenHistograms
}

func newVLLMMetrics(reg prometheus.Registerer) (*vllmMetrics, error) {
	var errs []error
	gauge := func(name, help string, extra ...string) *prometheus.GaugeVec {
		g, err := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append(append([]string{}, vllmLabels...), extra...)))
		errs = append(errs, err)
		return g
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		c, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(append([]string{}, vllmLabels...), extra...)))
		errs = append(errs, err)
		return c
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		h, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, vllmLabels))
		errs = append(errs, err)
		return h
	}
	m := &vllmMetrics{
		running: gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting: gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		waitingByReason: gauge("vllm:num_requests_waiting_by_reason",
			"Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
			"reason"),
		kvUsage:       gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		prefixQueries: counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens."),
		prefixHits:    counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens."),
		preemptions:   counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
		promptTokens:  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		genTokens:     counter("vllm:generation_tokens_total", "Number of generation tokens processed."),
		promptBySource: counter("vllm:prompt_tokens_by_source_total",
			"Number of prompt tokens by source.", "source"),
		promptCached: counter("vllm:prompt_tokens_cached_total",
			"Number of cached prompt tokens (local prefix cache plus external KV transfer)."),
		success: counter("vllm:request_success_total", "Count of successfully processed requests.", "finished_reason"),

		ttft: hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", vllmTTFTBuckets),
		itl:  hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", vllmITLBuckets),
		tpot: hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", vllmITLBuckets),
		e2e:  hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", vllmRequestLatencyBuckets),
		queue: hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
			vllmRequestLatencyBuckets),
		inference: hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.",
			vllmRequestLatencyBuckets),
		prefill: hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
			vllmRequestLatencyBuckets),
		decod: hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
			vllmRequestLatencyBuckets),
		iterationTokens: hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", vllmIterationBuckets),
	}
	cc, err := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vllm:cache_config_info",
		Help: "Information of the LLMEngine CacheConfig",
	}, []string{"block_size", "cache_dtype", "enable_prefix_caching", "engine", "gpu_memory_utilization",
		"num_cpu_blocks", "num_gpu_blocks", "prefix_caching_hash_algo"}))
	errs = append(errs, err)
	m.cacheConfig = cc
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// registerLenHistograms registers the token-count histograms, whose 1-2-5
// buckets stop at max_model_len.
func (m *vllmMetrics) registerLenHistograms(reg prometheus.Registerer, maxModelLen int) error {
	b := buckets125(maxModelLen)
	var err1, err2 error
	m.reqPromptTokens, err1 = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "vllm:request_prompt_tokens", Help: "Number of prefill tokens processed.", Buckets: b}, vllmLabels))
	m.reqGenTokens, err2 = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "vllm:request_generation_tokens", Help: "Number of generation tokens processed.", Buckets: b}, vllmLabels))
	return errors.Join(err1, err2)
}

// vllmRank is vllmMetrics curried with one engine's labels.
type vllmRank struct {
	running, waiting, kvUsage   prometheus.Gauge
	waitCapacity, waitDeferred  prometheus.Gauge
	prefixQueries, prefixHits   prometheus.Counter
	preemptions                 prometheus.Counter
	promptTokens, genTokens     prometheus.Counter
	promptCompute, promptHit    prometheus.Counter
	promptCached                prometheus.Counter
	success                     map[string]prometheus.Counter
	ttft, itl, tpot             prometheus.Observer
	e2e, queue, inference       prometheus.Observer
	prefill, decode             prometheus.Observer
	iterationTokens             prometheus.Observer
	reqPromptTokens, reqGenToks prometheus.Observer
}

func (m *vllmMetrics) bind(model string, cfg EngineConfig) *vllmRank {
	engine := itoa(cfg.Rank)
	l := prometheus.Labels{"model_name": model, "engine": engine}
	r := &vllmRank{
		running:         m.running.With(l),
		waiting:         m.waiting.With(l),
		kvUsage:         m.kvUsage.With(l),
		waitCapacity:    m.waitingByReason.WithLabelValues(model, engine, "capacity"),
		waitDeferred:    m.waitingByReason.WithLabelValues(model, engine, "deferred"),
		prefixQueries:   m.prefixQueries.With(l),
		prefixHits:      m.prefixHits.With(l),
		preemptions:     m.preemptions.With(l),
		promptTokens:    m.promptTokens.With(l),
		genTokens:       m.genTokens.With(l),
		promptCompute:   m.promptBySource.WithLabelValues(model, engine, "local_compute"),
		promptHit:       m.promptBySource.WithLabelValues(model, engine, "local_cache_hit"),
		promptCached:    m.promptCached.With(l),
		success:         make(map[string]prometheus.Counter, len(vllmFinishReasons)),
		ttft:            m.ttft.With(l),
		itl:             m.itl.With(l),
		tpot:            m.tpot.With(l),
		e2e:             m.e2e.With(l),
		queue:           m.queue.With(l),
		inference:       m.inference.With(l),
		prefill:         m.prefill.With(l),
		decode:          m.decod.With(l),
		iterationTokens: m.iterationTokens.With(l),
		reqPromptTokens: m.reqPromptTokens.With(l),
		reqGenToks:      m.reqGenTokens.With(l),
	}
	for _, reason := range vllmFinishReasons {
		r.success[reason] = m.success.WithLabelValues(model, engine, reason)
	}
	m.promptBySource.WithLabelValues(model, engine, "external_kv_transfer").Add(0)
	m.cacheConfig.With(prometheus.Labels{
		"block_size":               itoa(cfg.BlockSize),
		"cache_dtype":              "auto",
		"enable_prefix_caching":    "True",
		"engine":                   engine,
		"gpu_memory_utilization":   "0.9",
		"num_cpu_blocks":           "None",
		"num_gpu_blocks":           itoa(cfg.NumGPUBlocks),
		"prefix_caching_hash_algo": "sha256",
	}).Set(1)
	return r
}

func (r *vllmRank) state(running, waiting int, kvUsage float64) {
	r.running.Set(float64(running))
	r.waiting.Set(float64(waiting))
	r.waitCapacity.Set(float64(waiting))
	r.waitDeferred.Set(0)
	r.kvUsage.Set(kvUsage)
}

func (r *vllmRank) admitted(queries, hits int) {
	r.prefixQueries.Add(float64(queries))
	r.prefixHits.Add(float64(hits))
}

func (r *vllmRank) preempted(n int) { r.preemptions.Add(float64(n)) }

func (r *vllmRank) step(tokens, generated int) {
	r.iterationTokens.Observe(float64(tokens))
	r.genTokens.Add(float64(generated))
}

func (r *vllmRank) firstToken(promptTokens, cachedTokens int, ttft time.Duration) {
	r.promptTokens.Add(float64(promptTokens))
	r.promptCompute.Add(float64(promptTokens - cachedTokens))
	r.promptHit.Add(float64(cachedTokens))
	r.promptCached.Add(float64(cachedTokens))
	r.ttft.Observe(ttft.Seconds())
}

func (r *vllmRank) interToken(itl time.Duration) { r.itl.Observe(itl.Seconds()) }

func (r *vllmRank) finished(f finishStats) {
	if c, ok := r.success[f.reason]; ok {
		c.Inc()
	}
	r.e2e.Observe(f.e2e.Seconds())
	r.reqPromptTokens.Observe(float64(f.prompt))
	r.reqGenToks.Observe(float64(f.generation))
	if !f.hasTimes {
		return
	}
	r.queue.Observe(f.queue.Seconds())
	r.prefill.Observe(f.prefill.Seconds())
	r.decode.Observe(f.decode.Seconds())
	r.inference.Observe(f.inference.Seconds())
	if f.generation > 1 {
		r.tpot.Observe(f.decode.Seconds() / float64(f.generation-1))
	}
}
