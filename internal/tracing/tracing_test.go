package tracing

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/inferrail/inferrail/internal/logtest"
	"github.com/inferrail/inferrail/internal/tracing/otlptest"
)

func TestValidateNamesPathAndValue(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{
		{Config{OTLPEndpoint: "collector:4318", SampleRatio: 0.1}, []string{`observability.otlp_endpoint must be an http:// or https:// URL with a host, got "collector:4318"`}},
		{Config{OTLPEndpoint: "ftp://x", SampleRatio: 2}, []string{`observability.otlp_endpoint`, `observability.sample_ratio must be in [0, 1], got 2`}},
		{Config{SampleRatio: -0.5}, []string{`observability.sample_ratio must be in [0, 1], got -0.5`}},
	} {
		err := tc.cfg.Validate("observability")
		if err == nil {
			t.Fatalf("%+v: no error", tc.cfg)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %q lacks %q", tc.cfg, err, w)
			}
		}
	}
	for _, ok := range []Config{DefaultConfig(), {OTLPEndpoint: "http://127.0.0.1:4318", SampleRatio: 1}, {OTLPEndpoint: "https://c.example/otlp/v1/traces"}} {
		if err := ok.Validate("observability"); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://c:4318":          "http://c:4318/v1/traces",
		"http://c:4318/":         "http://c:4318/v1/traces",
		"https://c/custom/trace": "https://c/custom/trace",
	} {
		if got, err := tracesURL(in); err != nil || got != want {
			t.Errorf("tracesURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// A nil tracer is tracing off: no span, headers untouched.
func TestNilTracerIsOff(t *testing.T) {
	tr, err := New(DefaultConfig(), Options{})
	if err != nil || tr != nil {
		t.Fatalf("New without endpoint = %v, %v; want nil, nil", tr, err)
	}
	h := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	ctx := tr.Extract(context.Background(), h)
	ctx, span := tr.Start(ctx, "x", trace.SpanKindServer)
	if span.IsRecording() || trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("a nil tracer started a span")
	}
	out := http.Header{}
	tr.Inject(ctx, out)
	if len(out) != 0 {
		t.Fatalf("a nil tracer injected %v", out)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The client's traceparent is continued: the span is its child, and the
// header injected downstream names the new span as parent.
func TestContinuesAndExportsOverOTLP(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	reg := prometheus.NewRegistry()
	tr, err := New(Config{OTLPEndpoint: rcv.URL, SampleRatio: 0}, Options{Service: "svc", Instance: "n1", Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	const client = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := tr.Extract(context.Background(), http.Header{"Traceparent": {client}})
	ctx, span := tr.Start(ctx, "server", trace.SpanKindServer)
	out := http.Header{"Traceparent": {"stale"}}
	tr.Inject(ctx, out)
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("received %d spans (rejected %v), want 1", len(spans), rcv.Rejected())
	}
	s := spans[0]
	if s.TraceID != "0af7651916cd43dd8448eb211c80319c" || s.ParentID != "b7ad6b7169203331" || s.Name != "server" ||
		s.Kind != "SPAN_KIND_SERVER" || s.Service != "svc" {
		t.Fatalf("span %+v: want a server span of svc under the client's span (a sampled parent overrides ratio 0)", s)
	}
	if want := "00-" + s.TraceID + "-" + s.SpanID + "-01"; out.Get("Traceparent") != want {
		t.Fatalf("injected %q, want %q", out.Get("Traceparent"), want)
	}
	if got := testutil.ToFloat64(tr.exp.ok); got != 1 {
		t.Fatalf("spans exported ok = %v, want 1", got)
	}
}

// An unsampled new trace is not exported at ratio 0, and its injected
// traceparent says so.
func TestRatioZeroSamplesNothingNew(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	tr, err := New(Config{OTLPEndpoint: rcv.URL, SampleRatio: 0}, Options{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tr.Start(context.Background(), "server", trace.SpanKindServer)
	out := http.Header{}
	tr.Inject(ctx, out)
	span.End()
	_ = tr.Shutdown(context.Background())
	if n := len(rcv.Spans()); n != 0 {
		t.Fatalf("received %d spans at ratio 0, want 0", n)
	}
	if tp := out.Get("Traceparent"); !strings.HasSuffix(tp, "-00") {
		t.Fatalf("traceparent %q, want the unsampled flag", tp)
	}
}

// fakeExporter fails while err is set.
type fakeExporter struct {
	mu  sync.Mutex
	err error
}

func (f *fakeExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
func (f *fakeExporter) Shutdown(context.Context) error { return nil }

// A collector that is down is warned about once per outage, its recovery
// said once, and every lost span counted; the batch processor always sees
// success (no global error handler noise).
func TestExportWarnsOnceAndRecovers(t *testing.T) {
	var logs logtest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f := &fakeExporter{err: errors.New("connection refused")}
	e := newExporter(f, "http://c/v1/traces", log, prometheus.NewRegistry())
	spans := make([]sdktrace.ReadOnlySpan, 3)
	for range 5 {
		if err := e.ExportSpans(context.Background(), spans); err != nil {
			t.Fatalf("export returned %v, want nil", err)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d warnings for 5 failed batches, want 1:\n%s", n, logs.String())
	}
	if got := testutil.ToFloat64(e.failed); got != 15 {
		t.Fatalf("failed spans %v, want 15", got)
	}
	if got := testutil.ToFloat64(e.down); got != 1 {
		t.Fatalf("export_failing %v, want 1", got)
	}
	f.mu.Lock()
	f.err = nil
	f.mu.Unlock()
	for range 3 {
		_ = e.ExportSpans(context.Background(), spans)
	}
	out := logs.String()
	if strings.Count(out, "level=INFO") != 1 || !strings.Contains(out, "trace export works again") || strings.Count(out, "level=WARN") != 1 {
		t.Fatalf("want one warning and one recovery line:\n%s", out)
	}
	if testutil.ToFloat64(e.down) != 0 || testutil.ToFloat64(e.ok) != 9 {
		t.Fatalf("after recovery: failing %v, ok %v", testutil.ToFloat64(e.down), testutil.ToFloat64(e.ok))
	}
}

// Ending spans while the collector refuses connections returns at once:
// the export happens off the caller's path.
func TestDownCollectorDoesNotBlockSpans(t *testing.T) {
	rcv := otlptest.Start()
	url := rcv.URL
	rcv.Close() // nothing listens there any more
	tr, err := New(Config{OTLPEndpoint: url, SampleRatio: 1}, Options{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 * maxQueueSize { // more than the queue holds: the rest are dropped
			_, s := tr.Start(context.Background(), "x", trace.SpanKindServer)
			s.End()
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("ending spans blocked on a collector that is down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = tr.Shutdown(ctx)
}

// FuzzExtract: any traceparent and tracestate are parsed without a panic,
// and what is injected after is either nothing or a well-formed header.
func FuzzExtract(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "congo=t61rcWkgMzE")
	f.Add("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "")
	f.Add("00-00000000000000000000000000000000-b7ad6b7169203331-01", ",,,=")
	tr := &Tracer{}
	f.Fuzz(func(t *testing.T, tp, ts string) {
		ctx := tr.Extract(context.Background(), http.Header{"Traceparent": {tp}, "Tracestate": {ts}})
		out := http.Header{}
		tr.Inject(ctx, out)
		if got := out.Get("Traceparent"); got != "" && (len(got) != 55 || !strings.HasPrefix(got, "00-")) {
			t.Fatalf("injected malformed traceparent %q from %q", got, tp)
		}
	})
}

func TestStatusWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	w := &StatusWriter{ResponseWriter: rec}
	w.WriteHeader(http.StatusProcessing)
	w.WriteHeader(http.StatusBadGateway)
	_, _ = w.Write([]byte("x"))
	if w.Status != http.StatusBadGateway {
		t.Fatalf("status %d, want 502 (1xx not recorded)", w.Status)
	}
	if err := http.NewResponseController(w).Flush(); err != nil {
		t.Fatalf("flush through the wrapper: %v", err)
	}
	w2 := &StatusWriter{ResponseWriter: httptest.NewRecorder()}
	_, _ = w2.Write([]byte("x"))
	if w2.Status != http.StatusOK {
		t.Fatalf("implicit status %d, want 200", w2.Status)
	}
}
