package tracing

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/inferrail/inferrail/internal/buildinfo"
)

// Queue and export bounds of the batch span processor. A full queue drops
// new spans rather than block the request that ended them.
const (
	maxQueueSize   = 2048
	maxExportBatch = 512
	batchTimeout   = time.Second
	exportTimeout  = 5 * time.Second
)

// InstrumentationName names the tracer of every inferrail span.
const InstrumentationName = "github.com/inferrail/inferrail"

// Options identify the process in its spans and take its logger and
// metrics.
type Options struct {
	// Service is the service.name resource attribute (inferrail-balancer,
	// inferrail-sidecar).
	Service string
	// Instance is service.instance.id: the node name ("": none).
	Instance string
	// Log receives the export warnings (nil: discarded).
	Log *slog.Logger
	// Registerer receives the export metrics (nil: none).
	Registerer prometheus.Registerer
}

// Tracer starts spans and propagates their context. A nil *Tracer is
// tracing off.
type Tracer struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TraceContext
	exp    *exporter
}

// New returns the tracer of cfg, or nil (tracing off) when cfg has no
// endpoint. Nothing is dialled here: spans are exported in the background
// from the first batch on. cfg must be valid.
func New(cfg Config, o Options) (*Tracer, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	u, err := tracesURL(cfg.OTLPEndpoint)
	if err != nil {
		return nil, fmt.Errorf("otlp_endpoint %q: %w", cfg.OTLPEndpoint, err)
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	otlp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(u),
		otlptracehttp.WithTimeout(exportTimeout),
		// A short retry for a blip; a collector that stays down costs the
		// batch, never a request.
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true,
			InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 3 * time.Second}))
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	exp := newExporter(otlp, u, log, o.Registerer)
	attrs := []attribute.KeyValue{
		attribute.String("service.name", o.Service),
		attribute.String("service.version", buildinfo.Version()),
	}
	if o.Instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", o.Instance))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
		sdktrace.WithBatcher(exp,
			sdktrace.WithMaxQueueSize(maxQueueSize),
			sdktrace.WithMaxExportBatchSize(maxExportBatch),
			sdktrace.WithBatchTimeout(batchTimeout),
			sdktrace.WithExportTimeout(exportTimeout)),
	)
	return &Tracer{tp: tp, tracer: tp.Tracer(InstrumentationName), exp: exp}, nil
}

// Extract returns ctx with the remote span context of h's W3C traceparent
// and tracestate, when valid (ctx unchanged otherwise).
func (t *Tracer) Extract(ctx context.Context, h http.Header) context.Context {
	if t == nil {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject sets h's traceparent (and tracestate) to ctx's span, replacing
// what h had; without a valid span in ctx it leaves h alone.
func (t *Tracer) Inject(ctx context.Context, h http.Header) {
	if t == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	t.prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// Traceparent returns the traceparent and tracestate header values of ctx's
// span ("" without a valid span, or with tracing off), for a caller that
// sets them itself.
func (t *Tracer) Traceparent(ctx context.Context) (traceparent, tracestate string) {
	if t == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	t.prop.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// Start starts a span of kind under ctx's span (or a remote parent).
func (t *Tracer) Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Shutdown exports the spans still queued, within ctx, and stops the
// exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}
