package respcache

import "github.com/prometheus/client_golang/prometheus"

// Values of the cache label.
const (
	CacheExact    = "exact"
	CacheSemantic = "semantic"
)

// Values of the evictions' reason label.
const (
	reasonTTL    = "ttl"
	reasonBudget = "budget"
	reasonPurge  = "purge"
	reasonIndex  = "max_entries"
)

// metrics are the caches' metrics.
type metrics struct {
	hits       *prometheus.CounterVec
	misses     *prometheus.CounterVec
	bypass     *prometheus.CounterVec
	errors     *prometheus.CounterVec
	evictions  *prometheus.CounterVec
	stores     *prometheus.CounterVec
	size       *prometheus.GaugeVec
	entries    *prometheus.GaugeVec
	embedding  *prometheus.HistogramVec
	similarity prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_cache_hits_total",
			Help: "Requests answered from a response cache, by cache (exact, semantic).",
		}, []string{"cache"}),
		misses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_cache_misses_total",
			Help: "Cache lookups that found nothing, by cache (a request that misses both counts in both).",
		}, []string{"cache"}),
		bypass: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_cache_bypass_total",
			Help: "Requests not looked up, by reason: sampled, no_cache, no_store, unparsable.",
		}, []string{"reason"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_cache_errors_total",
			Help: "Cache failures, by cache and op: get, set, purge, embed, dimension, decode, sync.",
		}, []string{"cache", "op"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_cache_evictions_total",
			Help: "Entries removed before being read again, by cache and reason: ttl, budget, purge, max_entries.",
		}, []string{"cache", "reason"}),
		stores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_cache_stores_total",
			Help: "Responses stored, by cache.",
		}, []string{"cache"}),
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "inferrail_cache_size_bytes",
			Help: "Bytes held in this balancer's memory: exact (the response store) and semantic (the vector index).",
		}, []string{"cache"}),
		entries: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "inferrail_cache_entries",
			Help: "Entries held in this balancer's memory: exact (stored responses) and semantic (indexed vectors).",
		}, []string{"cache"}),
		embedding: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "inferrail_cache_embedding_duration_seconds",
			Help:    "Embedding calls of the semantic cache, by result: ok, error, timeout.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 14),
		}, []string{"result"}),
		similarity: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "inferrail_cache_semantic_nearest_distance",
			Help:    "Cosine distance of the nearest stored question at each semantic lookup that found one.",
			Buckets: []float64{0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2},
		}),
	}
	for _, c := range []string{CacheExact, CacheSemantic} {
		m.size.WithLabelValues(c)
		m.entries.WithLabelValues(c)
	}
	if reg != nil {
		reg.MustRegister(m.hits, m.misses, m.bypass, m.errors, m.evictions, m.stores, m.size, m.entries, m.embedding, m.similarity)
	}
	return m
}
