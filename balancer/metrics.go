package balancer

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Request outcomes, the values of the outcome label.
const (
	outcomeOK          = "ok"           // upstream 2xx/3xx
	outcomeClientError = "client_error" // upstream 4xx
	outcomeUpstream5xx = "upstream_error"
	outcomeBadRequest  = "bad_request" // rejected by the balancer: 4xx
	outcomeNoReplica   = "no_replica"  // 503: nothing serves the model
	outcomeFull        = "full"        // every replica at its caps: 503 (the EPP's 429) + Retry-After
	outcomeUnreachable = "unreachable" // 502/504: every attempt failed before a first byte
	outcomeClientGone  = "client_gone" // the client went away
	outcomeBroken      = "broken"      // the stream broke after its first byte
	outcomeRejected    = "rejected"    // refused by the gateway: 401, 403, 429, or 503 with Redis down
	outcomeShed        = "shed"        // refused for load: route.shed_delay (503, or the EPP's 429, + Retry-After)
)

// Modes, the values of the mode label: the request path that decided.
const (
	modeProxy = "proxy" // the balancer proxied the request
	modeEPP   = "epp"   // a gateway asked over ext_proc (docs/epp.md)
)

// newReloadMetrics returns the config reload metrics.
func newReloadMetrics(reg prometheus.Registerer) (*prometheus.CounterVec, prometheus.Gauge) {
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inferrail_balancer_config_reloads_total",
		Help: "Config reloads (SIGHUP, POST /admin/reload) by result: ok, error (the running config stayed).",
	}, []string{"result"})
	last := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "inferrail_balancer_config_last_reload_success_timestamp_seconds",
		Help: "Unix time of the last successful config reload (0: none since start).",
	})
	if reg != nil {
		reg.MustRegister(reloads, last)
	}
	return reloads, last
}

// metrics are the balancer's request-path metrics.
type metrics struct {
	requests     *prometheus.CounterVec
	ttft         *prometheus.HistogramVec
	decision     *prometheus.HistogramVec
	reasons      *prometheus.CounterVec
	promptTokens *prometheus.HistogramVec
	cachedTokens *prometheus.HistogramVec
	unpredicted  *prometheus.CounterVec
	textPrefix   *prometheus.CounterVec
	retries      *prometheus.CounterVec
	fallback     *prometheus.CounterVec
	loadReports  *prometheus.CounterVec
	// sharedPlacements counts placements shared between balancers.
	sharedPlacements *prometheus.CounterVec
	inFlight         prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	tokenBuckets := prometheus.ExponentialBuckets(16, 2, 14) // 16 .. 131072
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_requests_total",
			Help: "Client requests by model, route, outcome and mode (proxy, or epp for a gateway's ext_proc stream).",
		}, []string{"model", "route", "outcome", "mode"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "inferrail_balancer_ttft_seconds",
			Help:    "Time from a request's arrival to its first token, by model, policy and the replica that answered: a stream's first token-bearing event; for other responses, their headers (the whole response, for a non-streaming completion).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"model", "policy", "replica"}),
		decision: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "inferrail_balancer_route_decision_seconds",
			Help:    "Time to pick a replica (candidates and policy), per attempt, by mode (proxy or epp).",
			Buckets: prometheus.ExponentialBuckets(1e-6, 2, 16),
		}, []string{"model", "policy", "mode"}),
		reasons: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_route_decisions_total",
			Help: "Routing decisions by model and the policy's reason.",
		}, []string{"model", "reason"}),
		promptTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "inferrail_balancer_prompt_tokens",
			Help:    "Prompt tokens of tokenized requests.",
			Buckets: tokenBuckets,
		}, []string{"model"}),
		cachedTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "inferrail_balancer_predicted_cached_tokens",
			Help:    "Predicted cached prompt tokens on the chosen replica.",
			Buckets: append([]float64{0}, tokenBuckets...),
		}, []string{"model"}),
		unpredicted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_unpredicted_total",
			Help: "Requests routed without a cache prediction, by reason (no_tokenizer, too_large, wait_timeout, queue_full, canceled, unsupported, multi_prompt, error).",
		}, []string{"model", "reason"}),
		textPrefix: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_text_prefix_requests_total",
			Help: "Requests of models without a tokenizer routed on their text prefix identity: their token counts are estimates.",
		}, []string{"model"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_retries_total",
			Help: "Failed attempts followed by another attempt (before the first byte), by the failure: dial, status_502|503|504, upstream_error, first_byte_timeout, replica_down, route_deadline.",
		}, []string{"model", "reason"}),
		fallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_summary_fallback_total",
			Help: "Decisions that assumed prefix_hash placement because a replica's summary was missing or stale.",
		}, []string{"model"}),
		loadReports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_load_reports_total",
			Help: "Load reports (endpoint-load-metrics) read from sidecar responses, by result: ok or malformed.",
		}, []string{"result"}),
		sharedPlacements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_shared_placements_total",
			Help: "Placements and settlings shared with the other balancers over the gossip, by result: sent, dropped (the send queue was full), learned (another balancer's, recorded), unknown_model (another balancer's, for a model this one does not route).",
		}, []string{"result"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inferrail_balancer_in_flight_requests",
			Help: "Client requests being handled.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.ttft, m.decision, m.reasons, m.promptTokens, m.cachedTokens,
			m.unpredicted, m.textPrefix, m.retries, m.fallback, m.loadReports, m.sharedPlacements, m.inFlight)
	}
	return m
}

// forgetModel deletes every series of a model that is gone.
func (m *metrics) forgetModel(name string) {
	l := prometheus.Labels{"model": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.requests, m.ttft, m.decision, m.reasons, m.promptTokens, m.cachedTokens, m.unpredicted, m.textPrefix, m.retries, m.fallback,
	} {
		v.DeletePartialMatch(l)
	}
}
