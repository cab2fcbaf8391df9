package fleet

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the fleet's Prometheus metrics.
type metrics struct {
	ejections     *prometheus.CounterVec
	probeFailures *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, f *Fleet) *metrics {
	m := &metrics{
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_ejections_total",
			Help: "Passive ejections of a replica after consecutive failed requests.",
		}, []string{"replica"}),
		probeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_probe_failures_total",
			Help: "Failed active health probes per replica.",
		}, []string{"replica"}),
	}
	if reg != nil {
		reg.MustRegister(m.ejections, m.probeFailures, &replicaCollector{f: f})
	}
	return m
}

// forget deletes a replica's series when it leaves the fleet, so that a
// fleet churning through replicas keeps a bounded metrics page.
func (m *metrics) forget(id string) {
	m.ejections.DeleteLabelValues(id)
	m.probeFailures.DeleteLabelValues(id)
}

// count increments r's series of v, unless r has left the fleet (a probe or
// request that ends after the replica left must not bring its series back).
func (f *Fleet) count(v *prometheus.CounterVec, r *Replica) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.replicas[r.ID] == r {
		v.WithLabelValues(r.ID).Inc()
	}
}

var (
	descState = prometheus.NewDesc("inferrail_balancer_replica_state",
		"1 for the replica's current state (healthy, ejected, unhealthy, gone), 0 for the others.",
		[]string{"replica", "state"}, nil)
	descInFlight = prometheus.NewDesc("inferrail_balancer_replica_in_flight",
		"Requests this balancer is proxying to the replica.", []string{"replica"}, nil)
	descPending = prometheus.NewDesc("inferrail_balancer_replica_pending",
		"Requests to the replica whose prefill is not over (a stream before its first token, a non-streaming request before its estimated prefill end).", []string{"replica"}, nil)
	descPendingTokens = prometheus.NewDesc("inferrail_balancer_replica_pending_prefill_tokens",
		"Predicted uncached prompt tokens of the pending requests.", []string{"replica"}, nil)
	descTTFTScale = prometheus.NewDesc("inferrail_balancer_replica_ttft_correction",
		"Running ratio of measured to estimated time to first token that corrects cost_model's estimates.", []string{"replica"}, nil)
	descLoadAge = prometheus.NewDesc("inferrail_balancer_replica_load_age_seconds",
		"Age of the replica's last gossiped load report (absent: none received).", []string{"replica"}, nil)
	descSummaryAge = prometheus.NewDesc("inferrail_balancer_replica_summary_age_seconds",
		"Time since the replica's prefix summary was last confirmed current (absent: none).", []string{"replica"}, nil)
	descStale = prometheus.NewDesc("inferrail_balancer_replica_data_stale",
		"1 when the replica's gossiped load or summary is older than its max age and ignored by routing.",
		[]string{"replica", "data"}, nil)
)

// replicaCollector reports per-replica state from the current snapshot at
// scrape time.
type replicaCollector struct{ f *Fleet }

func (c *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descInFlight, descPending, descPendingTokens, descTTFTScale, descLoadAge, descSummaryAge, descStale} {
		ch <- d
	}
}

func (c *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.f.now()
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, r := range c.f.Snapshot().Replicas {
		st := r.State(now)
		for _, s := range States {
			ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, b2f(s == st), r.ID, string(s))
		}
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(r.Counters.InFlight.Load()), r.ID)
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(r.Counters.Pending.Load()), r.ID)
		ch <- prometheus.MustNewConstMetric(descPendingTokens, prometheus.GaugeValue, float64(r.Counters.PendingPrefillTokens.Load()), r.ID)
		ch <- prometheus.MustNewConstMetric(descTTFTScale, prometheus.GaugeValue, r.TTFTScale(), r.ID)
		m := r.member.Load()
		if m == nil {
			continue
		}
		loadStale := true
		if lr, fresh, ok := m.Load(now); ok {
			ch <- prometheus.MustNewConstMetric(descLoadAge, prometheus.GaugeValue, now.Sub(lr.ReceivedAt).Seconds(), r.ID)
			loadStale = !fresh
		}
		sumStale := true
		if v, fresh := m.Summary(now); v.Info().Valid {
			ch <- prometheus.MustNewConstMetric(descSummaryAge, prometheus.GaugeValue, now.Sub(m.SummaryConfirmedAt()).Seconds(), r.ID)
			sumStale = !fresh
		}
		ch <- prometheus.MustNewConstMetric(descStale, prometheus.GaugeValue, b2f(loadStale), r.ID, "load")
		ch <- prometheus.MustNewConstMetric(descStale, prometheus.GaugeValue, b2f(sumStale), r.ID, "summary")
	}
}
