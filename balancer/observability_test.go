package balancer

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/tracing/otlptest"
)

func TestObservabilityConfigErrors(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	cfg.Observability.OTLPEndpoint = "collector:4318"
	cfg.Observability.SampleRatio = 1.5
	err := cfg.Validate()
	for _, want := range []string{`observability.otlp_endpoint must be an http:// or https:// URL with a host, got "collector:4318"`,
		`observability.sample_ratio must be in [0, 1], got 1.5`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
	if _, err := DecodeConfig([]byte("observability:\n  otlp_endpont: http://c:4318\n"), DefaultConfig()); err == nil ||
		!strings.Contains(err.Error(), "otlp_endpont") {
		t.Errorf("unknown key accepted: %v", err)
	}
	got, err := DecodeConfig([]byte("observability:\n  otlp_endpoint: http://c:4318\n  sample_ratio: 1\n"), DefaultConfig())
	if err != nil || got.Observability.OTLPEndpoint != "http://c:4318" || got.Observability.SampleRatio != 1 {
		t.Errorf("decoded %+v, %v", got.Observability, err)
	}
}

// With tracing on, a request retried once gives a server span continuing
// the client's trace, two attempt spans under it carrying the decision, and
// each upstream request a traceparent naming its attempt's span.
func TestTracesRequestAndAttempts(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	fail := newUpstream(t, statusHandler(http.StatusServiceUnavailable))
	ok := newUpstream(t, okHandler)
	cfg := testConfig(fail.srv.URL, ok.srv.URL)
	cfg.Models[0].Routing.Policy = "round_robin"
	cfg.Observability.OTLPEndpoint, cfg.Observability.SampleRatio = rcv.URL, 0
	b, srv := newTestBalancer(t, cfg)
	const client = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var upstreamParents []string
	for range 2 { // round_robin: one of the two requests starts on the failing replica
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello there"}]}`))
		req.Header.Set("Traceparent", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	for len(fail.hits) > 0 {
		upstreamParents = append(upstreamParents, (<-fail.hits).Header.Get("Traceparent"))
	}
	for len(ok.hits) > 0 {
		upstreamParents = append(upstreamParents, (<-ok.hits).Header.Get("Traceparent"))
	}
	srv.Close() // waits for the handlers, whose deferred span ends follow the response
	b.shutdownTracer()
	spans := rcv.Spans()
	byID := map[string]otlptest.Span{}
	var servers, attempts int
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	for _, s := range spans {
		if s.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %s in trace %s, want the client's", s.Name, s.TraceID)
		}
		switch s.Kind {
		case "SPAN_KIND_SERVER":
			servers++
			if s.ParentID != "00f067aa0ba902b7" || s.Name != "POST /v1/chat/completions" || s.Attrs["inferrail.model"] != "m" ||
				s.Attrs["http.response.status_code"] != "200" || s.Service != "inferrail-balancer" {
				t.Errorf("server span %+v", s)
			}
		case "SPAN_KIND_CLIENT":
			attempts++
			if p := byID[s.ParentID]; p.Kind != "SPAN_KIND_SERVER" {
				t.Errorf("attempt span's parent %+v, want the server span", p)
			}
			for _, k := range []string{"inferrail.route.policy", "inferrail.route.candidates", "inferrail.route.winner",
				"inferrail.route.predicted_cached_tokens", "inferrail.route.estimated_ttft_seconds", "inferrail.route.reason"} {
				if s.Attrs[k] == "" {
					t.Errorf("attempt span lacks %s: %v", k, s.Attrs)
				}
			}
			if s.Attrs["inferrail.route.policy"] != "round_robin" || s.Attrs["inferrail.route.candidates"] != "2" {
				t.Errorf("attempt attributes %v", s.Attrs)
			}
			if s.Attrs["inferrail.route.winner"] == "r0" && (!s.Error || s.Attrs["inferrail.retry_reason"] != "status_503") {
				t.Errorf("the failed attempt %+v: want an error status and its retry reason", s)
			}
		}
	}
	if servers != 2 || attempts < 3 || attempts != len(upstreamParents) {
		t.Fatalf("%d server and %d attempt spans for %d upstream requests, want 2 servers and an attempt per upstream request (at least 3): %+v",
			servers, attempts, len(upstreamParents), spans)
	}
	for _, tp := range upstreamParents {
		parts := strings.Split(tp, "-")
		if len(parts) != 4 || byID[parts[2]].Kind != "SPAN_KIND_CLIENT" {
			t.Errorf("upstream traceparent %q does not name an attempt span", tp)
		}
	}
}

// A stream that breaks after its first byte aborts the handler; the
// attempt's span still ends, with an error, beside the server span.
func TestTracesBrokenStreamEndsAttempt(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"partial\":")
		_ = buf.Flush()
		conn.Close()
	})
	cfg := testConfig(up.srv.URL)
	cfg.Retry.MaxAttempts = 1
	cfg.Observability.OTLPEndpoint, cfg.Observability.SampleRatio = rcv.URL, 1
	b, srv := newTestBalancer(t, cfg)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`))
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	srv.Close()
	b.shutdownTracer()
	var attempt, server bool
	for _, s := range rcv.Spans() {
		switch s.Kind {
		case "SPAN_KIND_CLIENT":
			attempt = s.Error
		case "SPAN_KIND_SERVER":
			server = s.Error && s.Attrs["inferrail.outcome"] == "broken"
		}
	}
	if !attempt || !server {
		t.Fatalf("spans %+v: want the attempt and the server span ended with an error", rcv.Spans())
	}
}

// observability.profiling serves Go's profiles on the admin port, and only
// there; with API keys on, only to the admin token. Off (the default), the
// paths are not found.
func TestProfilingOnTheAdminPort(t *testing.T) {
	up := newUpstream(t, okHandler)
	for _, tc := range []struct {
		name      string
		profiling bool
		keys      bool
		header    []string
		want      int
	}{
		{"off", false, false, nil, http.StatusNotFound},
		{"on", true, false, nil, http.StatusOK},
		{"on, keys, no token", true, true, nil, http.StatusForbidden},
		{"on, keys, a client key", true, true, []string{"Authorization", "Bearer sk-a"}, http.StatusForbidden},
		{"on, keys, the admin token", true, true, []string{"Authorization", "Bearer adm"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(up.srv.URL)
			if tc.keys {
				cfg = keysConfig(up.srv.URL)
			}
			cfg.Observability.Profiling = tc.profiling
			b, client := newTestBalancer(t, cfg)
			admin := newAdminServer(t, b)
			resp, body := send(t, "GET", admin.URL+"/debug/pprof/goroutine?debug=1", "", tc.header...)
			if resp.StatusCode != tc.want {
				t.Fatalf("GET /debug/pprof/goroutine: %d %.200s, want %d", resp.StatusCode, body, tc.want)
			}
			switch tc.want {
			case http.StatusOK:
				if !strings.Contains(body, "goroutine profile:") {
					t.Errorf("not a goroutine profile: %.200s", body)
				}
			case http.StatusForbidden:
				wantError(t, resp, body, http.StatusForbidden, openai.TypePermissionDenied)
			}
			if resp, _ := send(t, "GET", client.URL+"/debug/pprof/cmdline", "", tc.header...); resp.StatusCode == http.StatusOK {
				t.Errorf("the client port serves profiles")
			}
		})
	}
}

// The profiles' guard is the gate of the config running at each request: a
// reload that turns API keys on closes them to all but the admin token.
func TestProfilingFollowsAReloadedGate(t *testing.T) {
	up := newUpstream(t, okHandler)
	cfg := testConfig(up.srv.URL)
	cfg.Observability.Profiling = true
	b, _ := newTestBalancer(t, cfg)
	admin := newAdminServer(t, b)
	path := admin.URL + "/debug/pprof/cmdline"
	if resp, body := send(t, "GET", path, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("before the reload: %d %.200s", resp.StatusCode, body)
	}
	next := keysConfig(up.srv.URL)
	next.Observability.Profiling = true
	b.SetReloadSource(func() (Config, error) { return next, nil })
	if resp, body := send(t, "POST", admin.URL+"/admin/reload", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("reload: %d %.300s", resp.StatusCode, body)
	}
	resp, body := send(t, "GET", path, "")
	wantError(t, resp, body, http.StatusForbidden, openai.TypePermissionDenied)
	if resp, body := send(t, "GET", path, "", "Authorization", "Bearer adm"); resp.StatusCode != http.StatusOK {
		t.Errorf("with the admin token after the reload: %d %.200s", resp.StatusCode, body)
	}
}
