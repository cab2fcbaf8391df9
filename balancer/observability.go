package balancer

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/tracing"
)

// ObservabilityConfig is the observability section: OpenTelemetry traces
// (otlp_endpoint, sample_ratio; docs/observability.md). It is read at
// start; a reload keeps the running tracer.
type ObservabilityConfig struct {
	tracing.Config `yaml:",inline"`
	// Profiling serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the admin port; with API keys on, only to the admin
	// token. Off by default. Read at start: a reload keeps what it started
	// with.
	Profiling bool `yaml:"profiling"`
}

// Validate reports every problem with its YAML path and value.
func (c ObservabilityConfig) Validate() error { return c.Config.Validate("observability") }

// tracerShutdown bounds the export of the last spans on shutdown.
const tracerShutdown = 2 * time.Second

// newTracer builds the balancer's tracer (nil: tracing off).
func (b *Balancer) newTracer() (*tracing.Tracer, error) {
	return tracing.New(b.cfg.Observability.Config, tracing.Options{Service: "inferrail-balancer", Instance: b.name,
		Log: b.log.With("component", "tracing"), Registerer: b.reg})
}

// shutdownTracer exports the spans still queued, within tracerShutdown.
func (b *Balancer) shutdownTracer() {
	ctx, cancel := context.WithTimeout(context.Background(), tracerShutdown)
	defer cancel()
	_ = b.tr.Shutdown(ctx)
}

// reqSpan is a proxied request's server span and the writer that records
// its status.
type reqSpan struct {
	span trace.Span
	sw   *tracing.StatusWriter // nil: the request is not sampled
}

// traceRequest starts a proxied request's server span, continuing the
// client's traceparent. Only called with tracing on; endRequest finishes it.
func (b *Balancer) traceRequest(w http.ResponseWriter, r *http.Request, id string) (http.ResponseWriter, *http.Request, reqSpan) {
	ctx := b.tr.Extract(r.Context(), r.Header)
	ctx, span := b.tr.Start(ctx, r.Method+" "+r.URL.Path, trace.SpanKindServer)
	if !span.IsRecording() { // not sampled: only the context travels on
		return w, r.WithContext(ctx), reqSpan{span: span}
	}
	span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
		attribute.String("inferrail.request_id", id))
	sw := &tracing.StatusWriter{ResponseWriter: w}
	return sw, r.WithContext(ctx), reqSpan{span: span, sw: sw}
}

// endRequest finishes s with what rq became. It keeps no reference to rq,
// so the request stays on forward's stack.
func (b *Balancer) endRequest(s reqSpan, rq *request) {
	if s.sw == nil {
		s.span.End()
		return
	}
	attrs := []attribute.KeyValue{attribute.String("inferrail.outcome", rq.outcome), attribute.String("inferrail.route", rq.kind.String()),
		attribute.Int("inferrail.prompt_tokens", rq.tokens)}
	if rq.model != nil {
		attrs = append(attrs, attribute.String("inferrail.model", rq.model.cfg.Name))
	}
	if s.sw.Status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", s.sw.Status))
	}
	s.span.SetAttributes(attrs...)
	switch rq.outcome {
	case outcomeOK, outcomeClientError, outcomeBadRequest, outcomeRejected, outcomeClientGone:
	default:
		s.span.SetStatus(codes.Error, rq.outcome)
	}
	s.span.End()
}

// traceAttempt starts the span of one attempt on rep with the routing
// decision d over candidates (nil with tracing off: r is returned as it is).
// endAttempt finishes it.
func (b *Balancer) traceAttempt(r *http.Request, rq *request, candidates int, rep *fleet.Replica, d *route.Decision, attempt int) (*http.Request, trace.Span) {
	if b.tr == nil {
		return r, nil
	}
	if !trace.SpanFromContext(r.Context()).IsRecording() {
		// The request is not sampled, so neither is its attempt: its
		// context still carries the trace (unsampled) upstream.
		ctx, span := b.tr.Start(r.Context(), "inferrail.attempt", trace.SpanKindClient)
		return r.WithContext(ctx), span
	}
	attrs := []attribute.KeyValue{
		attribute.Int("inferrail.attempt", attempt),
		attribute.String("inferrail.route.policy", rq.model.policy.Name()),
		attribute.Int("inferrail.route.candidates", candidates),
		attribute.Int("inferrail.route.eligible", d.Eligible),
		attribute.String("inferrail.route.winner", rep.ID),
		attribute.String("inferrail.route.reason", string(d.Reason)),
		attribute.Int("inferrail.route.predicted_cached_tokens", d.CachedTokens),
		attribute.Float64("inferrail.route.estimated_ttft_seconds", d.EstimatedTTFT.Seconds()),
		attribute.Float64("inferrail.route.score", d.Score),
		attribute.Bool("inferrail.route.summary_fallback", d.SummaryFallback),
	}
	if up := rep.Upstream(); up.Base != nil {
		attrs = append(attrs, attribute.String("server.address", up.Base.Host))
	}
	ctx, span := b.tr.Start(r.Context(), "inferrail.attempt", trace.SpanKindClient, attrs...)
	return r.WithContext(ctx), span
}

// endAttempt finishes an attempt's span (nil: tracing off) with its result.
func (b *Balancer) endAttempt(span trace.Span, rq *request, done bool, retry string, resp *http.Response, err error) {
	if span == nil {
		return
	}
	if !span.IsRecording() {
		span.End()
		return
	}
	if !done {
		span.SetAttributes(attribute.String("inferrail.retry_reason", retry))
		if resp != nil {
			span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		}
		msg := retry
		if err != nil {
			msg = retry + ": " + err.Error()
		}
		span.SetStatus(codes.Error, msg)
	} else if rq.outcome == outcomeUpstream5xx || rq.outcome == outcomeBroken {
		span.SetStatus(codes.Error, rq.outcome)
	}
	span.End()
}

// endBrokenAttempt ends the attempt span in r's context (if any) before
// the handler aborts on a stream broken after its first byte, which unwinds
// past endAttempt.
func endBrokenAttempt(r *http.Request) {
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetStatus(codes.Error, outcomeBroken)
		span.End()
	}
}

// setTraceHeaders sets an upstream request's trace context (tp "": none).
func setTraceHeaders(h http.Header, tp, ts string) {
	if tp == "" {
		return
	}
	h["Traceparent"] = []string{tp}
	if ts != "" {
		h["Tracestate"] = []string{ts}
	}
}
