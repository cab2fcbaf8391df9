package gateway

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gateway's metrics. Keys appear by name, never by value;
// requests without a key are labelled "keyless".
type Metrics struct {
	requests    *prometheus.CounterVec
	tokens      *prometheus.CounterVec
	storeErrors prometheus.Counter
	storeUp     prometheus.Gauge
	fallback    *prometheus.CounterVec
}

// KeylessLabel is the key label of requests when keys are off.
const KeylessLabel = "keyless"

// Gateway decisions, the values of the decision label.
const (
	DecisionAllowed      = "allowed"
	DecisionUnauthorized = "unauthorized"   // 401: no key or a wrong one
	DecisionForbidden    = "forbidden"      // 403: the key may not use the model
	DecisionRequests     = "limit_requests" // 429: the request bucket is empty
	DecisionTokens       = "limit_tokens"   // 429: the token bucket is short
	DecisionStoreDown    = "store_down"     // 503: Redis unreachable, failing closed
)

// NewMetrics registers the gateway's metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_gateway_requests_total",
			Help: "Requests by API key name and gateway decision (allowed, unauthorized, forbidden, limit_requests, limit_tokens, store_down).",
		}, []string{"key", "decision"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_gateway_tokens_total",
			Help: "Tokens charged to rate limits by API key name and kind (prompt, completion).",
		}, []string{"key", "kind"}),
		storeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_balancer_ratelimit_store_errors_total",
			Help: "Failed calls to the shared rate-limit store (Redis).",
		}),
		storeUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inferrail_balancer_ratelimit_store_up",
			Help: "1 while the shared rate-limit store (Redis) answers, 0 while it is treated as down; 0 without one.",
		}),
		fallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_ratelimit_fallback_total",
			Help: "Rate-limit decisions made without the shared store: mode open (in memory) or closed (rejected with 503).",
		}, []string{"mode"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.tokens, m.storeErrors, m.storeUp, m.fallback)
	}
	return m
}
