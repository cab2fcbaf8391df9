package engine

import "io"

// Adapter turns one engine kind's wire formats into engine-neutral values.
// Implementations are stateless and safe for concurrent use.
type Adapter interface {
	// Kind names the engine.
	Kind() Kind
	// DecodeBatch decodes one KV-event payload (the third ZMQ frame). It never
	// panics, and allocates in proportion to len(payload) at most.
	DecodeBatch(payload []byte) (Batch, error)
	// ParseMetrics reads at most maxBytes of a Prometheus text page and
	// returns the engine's load; errors wrap ErrUnreadable.
	ParseMetrics(r io.Reader, maxBytes int64) (Load, error)
	// MetricNames is the adapter's table of metric names.
	MetricNames() MetricNames
}
