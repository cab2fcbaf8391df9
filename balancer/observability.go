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

// traceRequest starts a proxied request's server span, continuing the
// client's traceparent; end finishes it with what rq became. Only called
// with tracing on.
func (b *Balancer) traceRequest(w http.ResponseWriter, r *http.Request, rq *request) (http.ResponseWriter, *http.Request, func()) {
	ctx := b.tr.Extract(r.Context(), r.Header)
	ctx, span := b.tr.Start(ctx, r.Method+" "+r.URL.Path, trace.SpanKindServer)
	if !span.IsRecording() { // not sampled: only the context travels on
		return w, r.WithContext(ctx), func() { span.End() }
	}
	span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
		attribute.String("inferrail.request_id", rq.id))
	sw := &tracing.StatusWriter{ResponseWriter: w}
	return sw, r.WithContext(ctx), func() {
		attrs := []attribute.KeyValue{attribute.String("inferrail.outcome", rq.outcome), attribute.String("inferrail.route", rq.kind.String()),
			attribute.Int("inferrail.prompt_tokens", rq.tokens)}
		if rq.model != nil {
			attrs = append(attrs, attribute.String("inferrail.model", rq.model.cfg.Name))
		}
		if sw.Status != 0 {
			attrs = append(attrs, attribute.Int("http.response.status_code", sw.Status))
		}
		span.SetAttributes(attrs...)
		switch rq.outcome {
		case outcomeOK, outcomeClientError, outcomeBadRequest, outcomeRejected, outcomeClientGone:
		default:
			span.SetStatus(codes.Error, rq.outcome)
		}
		span.End()
	}
}

// noAttempt is traceAttempt's end with tracing off.
func noAttempt(bool, string, *http.Response, error) {}

// traceAttempt starts the span of one attempt on rep with the routing
// decision d over candidates; end finishes it with the attempt's result.
// With tracing off it returns r and a no-op.
func (b *Balancer) traceAttempt(r *http.Request, rq *request, candidates int, rep *fleet.Replica, d route.Decision, attempt int) (*http.Request, func(done bool, retry string, resp *http.Response, err error)) {
	if b.tr == nil {
		return r, noAttempt
	}
	if !trace.SpanFromContext(r.Context()).IsRecording() {
		// The request is not sampled, so neither is its attempt: its
		// context still carries the trace (unsampled) upstream.
		ctx, span := b.tr.Start(r.Context(), "inferrail.attempt", trace.SpanKindClient)
		return r.WithContext(ctx), func(bool, string, *http.Response, error) { span.End() }
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
	return r.WithContext(ctx), func(done bool, retry string, resp *http.Response, err error) {
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
}
