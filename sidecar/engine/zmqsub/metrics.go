package zmqsub

import "github.com/prometheus/client_golang/prometheus"

// metrics are the subscriber's Prometheus metrics, labelled by rank.
type metrics struct {
	batches, duplicates, gaps, restarts, incomplete, decodeErrors, dropped, malformed, reconnects, rejected *prometheus.CounterVec
	replays                                                                                                 *prometheus.CounterVec
	connected                                                                                               *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_sidecar_kvevents_" + name, Help: help,
		}, append([]string{"rank"}, labels...))
	}
	m := &metrics{
		batches:      counter("batches_total", "KV-event batches delivered."),
		duplicates:   counter("duplicate_batches_total", "Live batches dropped because a replay already delivered them."),
		gaps:         counter("gaps_total", "Sequence gaps detected on the live stream."),
		restarts:     counter("publisher_restarts_total", "Publisher restarts detected (sequence went backwards)."),
		incomplete:   counter("lost_total", "Gaps that replay could not fill (rank cleared and marked incomplete)."),
		decodeErrors: counter("decode_errors_total", "Batches whose payload could not be decoded."),
		dropped:      counter("dropped_batches_total", "Batches dropped because the consumer did not keep up."),
		malformed:    counter("malformed_messages_total", "Messages with an unexpected frame layout."),
		reconnects:   counter("reconnects_total", "Subscription sessions that ended in an error."),
		replays:      counter("replays_total", "Replay requests by result.", "result"),
		rejected: counter("rejected_connections_total",
			"Connections to the engine's PUB or replay socket closed for a message over kv_events.max_message_bytes or a handshake over the dial timeout."),
		connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "inferrail_sidecar_kvevents_connected", Help: "1 while the rank's SUB socket is connected.",
		}, []string{"rank"}),
	}
	if reg != nil {
		reg.MustRegister(m.batches, m.duplicates, m.gaps, m.restarts, m.incomplete, m.decodeErrors, m.dropped,
			m.malformed, m.reconnects, m.replays, m.rejected, m.connected)
	}
	return m
}
