package kvevents

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the publisher's counters, labelled with its DP rank so that
// several ranks can share one registry.
type metrics struct {
	batches        prometheus.Counter
	events         *prometheus.CounterVec
	byType         [AllBlocksCleared + 1]prometheus.Counter // children of events
	dropped        prometheus.Counter
	replayRequests prometheus.Counter
	rejected       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, rank int) (*metrics, error) {
	labels := prometheus.Labels{"rank": strconv.Itoa(rank)}
	m := &metrics{
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "inferrail_sim_kv_event_batches_total",
			Help:        "KV-event batches (one per engine step with events) published on the PUB socket.",
			ConstLabels: labels,
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "inferrail_sim_kv_event_events_total",
			Help:        "KV-cache events published, by event type.",
			ConstLabels: labels,
		}, []string{"type"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "inferrail_sim_kv_event_dropped_batches_total",
			Help:        "KV-event batches dropped because the publisher's queue was full.",
			ConstLabels: labels,
		}),
		replayRequests: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "inferrail_sim_kv_event_replay_requests_total",
			Help:        "Requests received on the replay (ROUTER) socket, well-formed or not.",
			ConstLabels: labels,
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "inferrail_sim_kv_event_rejected_connections_total",
			Help:        "Peer connections to the PUB or replay socket closed for a message over the limit or a handshake timeout.",
			ConstLabels: labels,
		}),
	}
	for _, t := range []EventType{BlockStored, BlockRemoved, AllBlocksCleared} {
		m.byType[t] = m.events.WithLabelValues(t.String())
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.batches, m.events, m.dropped, m.replayRequests, m.rejected} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register kv event metrics for rank %d: %w", rank, err)
		}
	}
	return m, nil
}
