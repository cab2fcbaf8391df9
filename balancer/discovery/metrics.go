package discovery

import "github.com/prometheus/client_golang/prometheus"

// metrics are DNS discovery's metrics.
type metrics struct {
	lookups  *prometheus.CounterVec
	replicas *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_balancer_discovery_lookups_total",
			Help: "DNS lookups of a discovery group's names, by result: ok, or error (the name's last known addresses were kept).",
		}, []string{"group", "result"}),
		replicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "inferrail_balancer_discovery_replicas",
			Help: "Replicas a DNS discovery group holds after its last refresh.",
		}, []string{"group"}),
	}
	if reg != nil {
		reg.MustRegister(m.lookups, m.replicas)
	}
	return m
}
