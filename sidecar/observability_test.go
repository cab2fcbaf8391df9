package sidecar

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/tracing"
	"github.com/inferrail/inferrail/internal/tracing/otlptest"
)

// The data path continues the balancer's trace with its own server span,
// and the engine receives that span as the parent in its traceparent.
func TestProxyTracesUnderTheBalancer(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	tr, err := tracing.New(tracing.Config{OTLPEndpoint: rcv.URL, SampleRatio: 0}, tracing.Options{Service: "inferrail-sidecar"})
	if err != nil {
		t.Fatal(err)
	}
	engineSaw := make(chan string, 1)
	engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		engineSaw <- r.Header.Get("Traceparent")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	_, srv, _ := testProxy(t, engine, nil, nil, func(p *proxy) { p.tr = tr })
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/completions", strings.NewReader(`{"model":"m","prompt":"hi"}`))
	const balancer = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req.Header.Set("Traceparent", balancer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.Close() // the handler, and so its span, has ended
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || s.ParentID != "00f067aa0ba902b7" || s.Kind != "SPAN_KIND_SERVER" ||
		s.Attrs["http.response.status_code"] != "200" || s.Attrs["inferrail.prompt_tokens"] == "" {
		t.Fatalf("span %+v: want a server span under the balancer's", s)
	}
	if got, want := <-engineSaw, "00-"+s.TraceID+"-"+s.SpanID+"-01"; got != want {
		t.Fatalf("engine saw traceparent %q, want %q (the sidecar's span)", got, want)
	}
}

func TestObservabilityConfigErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Observability.OTLPEndpoint, cfg.Observability.SampleRatio = "nohost", -1
	err := cfg.Validate()
	for _, want := range []string{`observability.otlp_endpoint must be an http:// or https:// URL with a host, got "nohost"`,
		"observability.sample_ratio must be in [0, 1], got -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
}
