package gossip

import (
	"strings"
	"sync"
	"time"

	gometrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// nodeLabel is the go-metrics label memberlist puts on every metric of a
// node (through Config.MetricLabels), so the process-global sink can route
// it to that node's registerer.
const nodeLabel = "node"

// memberlistSink is a go-metrics sink for memberlist's metrics. go-metrics
// has one sink per process; this one routes each sample by its node label
// to the metrics of the Node of that name, so several nodes in one process
// (tests, `inferrail dev`) keep their figures apart. Samples without a known
// node label are dropped.
type memberlistSink struct {
	nodes sync.Map // node name → *metrics
}

var (
	globalSink = &memberlistSink{}
	sinkOnce   sync.Once
)

// installSink makes globalSink go-metrics' global sink, once per process.
// It replaces whatever sink was set before (nothing else in inferrail uses
// go-metrics). No runtime collector is started.
func installSink() {
	sinkOnce.Do(func() {
		_, _ = gometrics.NewGlobal(&gometrics.Config{
			TimerGranularity: time.Millisecond,
			ProfileInterval:  time.Second,
			FilterDefault:    true,
		}, globalSink)
	})
}

var _ gometrics.MetricSink = (*memberlistSink)(nil)

// route returns the node's metrics and the series name for a sample: the key
// joined with "_", followed by the values of labels other than the node's.
func (s *memberlistSink) route(key []string, labels []gometrics.Label) (*metrics, string) {
	var node string
	name := strings.Join(key, "_")
	for _, l := range labels {
		if l.Name == nodeLabel {
			node = l.Value
		} else {
			name += "_" + l.Value
		}
	}
	if node == "" {
		return nil, ""
	}
	m, ok := s.nodes.Load(node)
	if !ok {
		return nil, ""
	}
	return m.(*metrics), strings.ReplaceAll(name, ".", "_")
}

// SetGauge implements gometrics.MetricSink (memberlist always labels).
func (s *memberlistSink) SetGauge(key []string, val float32) {}

// SetGaugeWithLabels implements gometrics.MetricSink.
func (s *memberlistSink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	if m, name := s.route(key, labels); m != nil {
		m.mlGauges.WithLabelValues(name).Set(float64(val))
	}
}

// EmitKey implements gometrics.MetricSink; memberlist does not emit keys.
func (s *memberlistSink) EmitKey(key []string, val float32) {}

// IncrCounter implements gometrics.MetricSink (memberlist always labels).
func (s *memberlistSink) IncrCounter(key []string, val float32) {}

// IncrCounterWithLabels implements gometrics.MetricSink.
func (s *memberlistSink) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	if m, name := s.route(key, labels); m != nil && val >= 0 {
		m.mlCounters.WithLabelValues(name).Add(float64(val))
	}
}

// AddSample implements gometrics.MetricSink (memberlist always labels).
func (s *memberlistSink) AddSample(key []string, val float32) {}

// AddSampleWithLabels implements gometrics.MetricSink.
func (s *memberlistSink) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	if m, name := s.route(key, labels); m != nil {
		m.mlSamples.WithLabelValues(name).Observe(float64(val))
	}
}

// newMemberlistMetrics returns the vectors the sink feeds.
func newMemberlistMetrics() (*prometheus.CounterVec, *prometheus.GaugeVec, *prometheus.SummaryVec) {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_gossip_memberlist_total",
			Help: "memberlist's own go-metrics counters, by name (the go-metrics key joined with _, e.g. memberlist_msg_dead; udp/tcp sent and received count bytes).",
		}, []string{"name"}),
		prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "inferrail_gossip_memberlist_gauge",
			Help: "memberlist's own go-metrics gauges, by name (e.g. memberlist_health_score, memberlist_node_instances_alive).",
		}, []string{"name"}),
		prometheus.NewSummaryVec(prometheus.SummaryOpts{
			Name:       "inferrail_gossip_memberlist_sample",
			Help:       "memberlist's own go-metrics samples, by name: timers in milliseconds (memberlist_probeNode, memberlist_gossip, memberlist_pushPullNode), sizes in bytes, queue depths.",
			Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001},
		}, []string{"name"})
}
