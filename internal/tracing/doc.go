// Package tracing is inferrail's OpenTelemetry tracing: a tracer provider
// that exports spans over OTLP/HTTP with the official Go SDK, sampled by a
// ratio (parent-based, so a client's sampled traceparent is always kept),
// and W3C Trace Context propagation in and out of HTTP headers.
//
// A nil *Tracer is tracing off: every method is a no-op behind one nil
// check, so the request path pays nothing. With an endpoint set, spans are
// queued on a bounded batch processor and exported in the background: a
// collector that is down never slows a request; its first failure is logged
// once as a warning, its recovery once, and the spans lost meanwhile are
// counted (inferrail_tracing_spans_exported_total{result="failed"}).
package tracing
