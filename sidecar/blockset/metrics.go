package blockset

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/ratelog"
)

// metrics are the block set's Prometheus metrics.
type metrics struct {
	stored, removed, clears, overflows prometheus.Counter
	skipped                            *prometheus.CounterVec
	// overflowLog logs capacity overflows at most once a minute.
	overflowLog *ratelog.Logger
}

func newMetrics(s *Set, reg prometheus.Registerer) *metrics {
	m := &metrics{
		stored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_sidecar_blockset_stored_blocks_total",
			Help: "Blocks re-hashed from BlockStored events and held.",
		}),
		removed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_sidecar_blockset_removed_blocks_total",
			Help: "Block holders dropped by BlockRemoved events.",
		}),
		clears: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_sidecar_blockset_rank_clears_total",
			Help: "Ranks cleared (AllBlocksCleared, publisher restart, unfilled gap).",
		}),
		overflows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_sidecar_blockset_capacity_overflows_total",
			Help: "Ranks cleared (and marked incomplete) for holding more GPU blocks than the engine's num_gpu_blocks.",
		}),
		overflowLog: ratelog.New(s.log, time.Minute),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_sidecar_blockset_skipped_blocks_total",
			Help: "Announced blocks not held, by reason.",
		}, []string{"reason"}),
	}
	if reg == nil {
		return m
	}
	blocks := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "inferrail_sidecar_blockset_blocks",
		Help: "Distinct router blocks held in any medium.",
	}, func() float64 { return float64(s.Len()) })
	incomplete := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "inferrail_sidecar_blockset_incomplete",
		Help: "1 while a rank was cleared after a gap it could not recover.",
	}, func() float64 {
		if s.Incomplete() {
			return 1
		}
		return 0
	})
	reg.MustRegister(m.stored, m.removed, m.clears, m.overflows, m.skipped, blocks, incomplete)
	return m
}

// observe adds the difference between two Stats to the counters.
func (m *metrics) observe(before, after Stats) {
	m.stored.Add(float64(after.Stored - before.Stored))
	m.removed.Add(float64(after.Removed - before.Removed))
	m.clears.Add(float64(after.Clears - before.Clears))
	m.overflows.Add(float64(after.Overflows - before.Overflows))
	for _, r := range [...]struct {
		reason string
		d      int
	}{
		{"placeholder", after.SkippedPlaceholder - before.SkippedPlaceholder},
		{"partial", after.SkippedPartial - before.SkippedPartial},
		{"group", after.SkippedGroup - before.SkippedGroup},
		{"orphan", after.SkippedOrphan - before.SkippedOrphan},
		{"opaque", after.SkippedOpaque - before.SkippedOpaque},
		{"lora", after.SkippedLoRA - before.SkippedLoRA},
	} {
		if r.d > 0 {
			m.skipped.WithLabelValues(r.reason).Add(float64(r.d))
		}
	}
}
