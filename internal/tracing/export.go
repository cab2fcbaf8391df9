package tracing

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporter wraps the OTLP exporter: it counts the spans exported and lost,
// warns once when the collector stops taking them and says once when it
// takes them again. It reports success to the batch processor either way,
// so the SDK's global error handler does not log every failed batch.
type exporter struct {
	next     sdktrace.SpanExporter
	endpoint string
	log      *slog.Logger
	failing  atomic.Bool
	ok       prometheus.Counter
	failed   prometheus.Counter
	down     prometheus.Gauge
}

func newExporter(next sdktrace.SpanExporter, endpoint string, log *slog.Logger, reg prometheus.Registerer) *exporter {
	spans := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inferrail_tracing_spans_exported_total",
		Help: "Spans handed to the OTLP collector, by result: ok, or failed (the collector was unreachable or refused them; they are dropped).",
	}, []string{"result"})
	e := &exporter{next: next, endpoint: endpoint, log: log,
		ok: spans.WithLabelValues("ok"), failed: spans.WithLabelValues("failed"),
		down: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "inferrail_tracing_export_failing",
			Help: "1 while the last span export to the OTLP collector failed, else 0.",
		})}
	if reg != nil {
		reg.MustRegister(spans, e.down)
	}
	return e
}

// ExportSpans exports one batch.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.next.ExportSpans(ctx, spans); err != nil {
		e.failed.Add(float64(len(spans)))
		e.down.Set(1)
		if !e.failing.Swap(true) {
			e.log.Warn("trace export failed: spans are dropped until the collector takes them again",
				"endpoint", e.endpoint, "spans", len(spans), "err", err)
		} else {
			e.log.Debug("trace export failed", "endpoint", e.endpoint, "spans", len(spans), "err", err)
		}
		return nil
	}
	e.ok.Add(float64(len(spans)))
	e.down.Set(0)
	if e.failing.Swap(false) {
		e.log.Info("trace export works again", "endpoint", e.endpoint)
	}
	return nil
}

// Shutdown stops the wrapped exporter.
func (e *exporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }
