package sidecar

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics is every metric the sidecar itself exports (the gossip node and the
// event subscriber register their own on the same registry).
type metrics struct {
	scrapes        *prometheus.CounterVec
	scrapeSeconds  prometheus.Histogram
	loadReadable   prometheus.Gauge
	engineRunning  prometheus.Gauge
	engineWaiting  prometheus.Gauge
	engineKVUsage  prometheus.Gauge
	engineCapacity prometheus.Gauge
	engineRestarts prometheus.Counter

	proxyRequests      *prometheus.CounterVec
	engineRetries      prometheus.Counter
	promptsUntokenized *prometheus.CounterVec

	eventBatches prometheus.Counter
	eventGaps    prometheus.Counter
	eventReplays prometheus.Counter
	eventsMode   *prometheus.GaugeVec

	blocksHeld      *prometheus.GaugeVec
	approxEvictions prometheus.Counter

	summaryBytes    prometheus.Gauge
	summaryEpoch    prometheus.Gauge
	summarySeq      prometheus.Gauge
	summaryRebuilds *prometheus.CounterVec
	summaryComplete prometheus.Gauge
}

// eventsModes are the values of the events mode gauge's label.
var eventsModes = []string{modeDisabled, modeWaiting, modeLive, modeSilent}

func newMetrics(reg prometheus.Registerer, dataPath func() DataPathCounts) *metrics {
	const ns, sub = "inferrail", "sidecar"
	m := &metrics{
		scrapes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "scrapes_total",
			Help: "Engine metrics scrapes by result: ok, error (the request failed) or unreadable (the page was not understood)."}, []string{"result"}),
		scrapeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "scrape_duration_seconds",
			Help: "Duration of engine metrics scrapes.", Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}}),
		loadReadable: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "engine_load_readable",
			Help: "1 when the last engine scrape was read, 0 when the engine's load is unknown."}),
		engineRunning: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "engine_requests_running",
			Help: "Requests running in the engine at the last readable scrape."}),
		engineWaiting: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "engine_requests_waiting",
			Help: "Requests waiting in the engine at the last readable scrape."}),
		engineKVUsage: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "engine_kv_usage_ratio",
			Help: "Engine KV-cache usage (0..1) at the last readable scrape."}),
		engineCapacity: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "engine_capacity_blocks",
			Help: "Engine KV-cache capacity in blocks (cache_config_info num_gpu_blocks)."}),
		engineRestarts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "engine_restarts_total",
			Help: "Engine restarts noticed from its cumulative token counters going back."}),
		proxyRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "proxy_requests_total",
			Help: "Data-path requests by outcome: the engine's status class, upstream_error, client_gone or client_error."}, []string{"outcome"}),
		engineRetries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "engine_retries_total",
			Help: "Requests sent again on a fresh connection because the pooled keep-alive connection to the engine closed before any response byte."}),
		promptsUntokenized: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "prompts_untokenized_total",
			Help: "Data-path prompts the sidecar could not tokenize or hash, by reason (no_tokenizer, model_unknown, unparsed, too_large)."}, []string{"reason"}),
		eventBatches: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "event_batches_total",
			Help: "KV-event batches applied to the block set."}),
		eventGaps: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "event_gaps_total",
			Help: "KV-event sequence gaps detected."}),
		eventReplays: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "event_replays_total",
			Help: "KV-event gaps recovered through the replay socket."}),
		eventsMode: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "events_mode",
			Help: "1 for the current KV-events mode: disabled (no endpoint), waiting (no batch yet), live, or silent (traffic but no events: the approximate set is used)."}, []string{"mode"}),
		blocksHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "blocks_held",
			Help: "Blocks in the sidecar's block set, by source (exact from events, approx from data-path prompts)."}, []string{"source"}),
		approxEvictions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "approx_evictions_total",
			Help: "Blocks evicted from the approximate block set (LRU at the engine's capacity)."}),
		summaryBytes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "summary_bytes",
			Help: "Size of the current summary snapshot in bytes."}),
		summaryEpoch: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "summary_epoch",
			Help: "Epoch of the current summary (a full rebuild starts a new one)."}),
		summarySeq: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "summary_seq",
			Help: "Sequence of the current summary within its epoch."}),
		summaryRebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "summary_rebuilds_total",
			Help: "Summary rebuilds (new epochs) by reason: removals, period, reset, source."}, []string{"reason"}),
		summaryComplete: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "summary_complete",
			Help: "1 when the summary is built from a complete exact block set, 0 while it is approximate or being rebuilt."}),
	}
	reg.MustRegister(m.scrapes, m.scrapeSeconds, m.loadReadable, m.engineRunning, m.engineWaiting, m.engineKVUsage,
		m.engineCapacity, m.engineRestarts, m.proxyRequests, m.engineRetries, m.promptsUntokenized, m.eventBatches, m.eventGaps, m.eventReplays,
		m.eventsMode, m.blocksHeld, m.approxEvictions, m.summaryBytes, m.summaryEpoch, m.summarySeq,
		m.summaryRebuilds, m.summaryComplete)
	if dataPath != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "proxy_requests_in_flight",
				Help: "Data-path requests in flight."}, func() float64 { return float64(dataPath().InFlight) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "proxy_requests_prefilling",
				Help: "Data-path requests whose prefill is not over (no first token yet)."}, func() float64 { return float64(dataPath().Prefilling) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "proxy_prefill_tokens_waiting",
				Help: "Uncached prompt tokens of the data-path requests whose prefill is not over."}, func() float64 { return float64(dataPath().WaitingPrefillTokens) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "proxy_prompt_tokens_in_flight",
				Help: "Prompt tokens of the data-path requests in flight."}, func() float64 { return float64(dataPath().PromptTokens) }),
		)
	}
	for _, r := range []string{"ok", "error", "unreadable"} {
		m.scrapes.WithLabelValues(r)
	}
	return m
}
