package sidecar

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/inferrail/inferrail/internal/tracing"
)

// ObservabilityConfig is the observability section: OpenTelemetry traces
// (otlp_endpoint, sample_ratio; docs/observability.md).
type ObservabilityConfig struct {
	tracing.Config `yaml:",inline"`
	// Profiling serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the admin port. Off by default.
	Profiling bool `yaml:"profiling"`
}

// tracerShutdown bounds the export of the last spans on shutdown.
const tracerShutdown = 2 * time.Second

// traced reports whether a data-path request gets a span: a POST (the
// inference routes), or any request that arrives in a trace. Health probes
// and model listings without one start no trace of their own.
func traced(r *http.Request) bool {
	return r.Method == http.MethodPost || r.Header.Get("Traceparent") != ""
}

// traceRequest starts the data path's server span under the balancer's
// traceparent and replaces that header with the new span, so the engine
// sees the sidecar's span as its parent; end finishes the span. Only called
// with tracing on.
func (p *proxy) traceRequest(w http.ResponseWriter, r *http.Request) (*tracing.StatusWriter, *http.Request, func(st *reqState)) {
	ctx := p.tr.Extract(r.Context(), r.Header)
	ctx, span := p.tr.Start(ctx, r.Method+" "+r.URL.Path, trace.SpanKindServer,
		attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path))
	p.tr.Inject(ctx, r.Header)
	sw := &tracing.StatusWriter{ResponseWriter: w}
	return sw, r.WithContext(ctx), func(st *reqState) {
		attrs := []attribute.KeyValue{attribute.Int("http.response.status_code", sw.Status)}
		if st.origin != "" {
			attrs = append(attrs, attribute.String("inferrail.origin", st.origin))
		}
		if st.prompt {
			attrs = append(attrs, attribute.Int("inferrail.prompt_tokens", st.tokens),
				attribute.Int("inferrail.cached_tokens", st.cached), attribute.Bool("inferrail.stream", st.stream))
		}
		span.SetAttributes(attrs...)
		if sw.Status >= 500 || sw.Status == 0 {
			span.SetStatus(codes.Error, http.StatusText(sw.Status))
		}
		span.End()
	}
}

// shutdownTracer exports the spans still queued, within tracerShutdown.
func (s *Sidecar) shutdownTracer() {
	ctx, cancel := context.WithTimeout(context.Background(), tracerShutdown)
	defer cancel()
	_ = s.proxy.tr.Shutdown(ctx)
}
