package balancer

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per op since start (every
// goroutine: the exporter's too), which a shared machine's queueing does not
// inflate the way it does wall time.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// discardCollector accepts OTLP/HTTP exports and drops them unread, so a
// benchmark counts the exporter's work and not a test receiver's decoding.
func discardCollector() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
}

// BenchmarkTracing is the balancer's cost per request with tracing off,
// and on at ratio 0.1 and 1 (spans exported to an OTLP receiver on
// loopback): the BenchmarkForward request (chat, ~600-token system prompt,
// tokenized) against a fake upstream, closed loop, one client goroutine so
// the per-request figures are not blurred by the shared cores. Figures in
// docs/observability.md.
func BenchmarkTracing(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(okHandler))
	defer up.Close()
	rcv := discardCollector()
	defer rcv.Close()
	prompt := strings.Repeat("You are a careful assistant; answer briefly and cite the document. ", 30)
	body := fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":%q},{"role":"user","content":"hi"}],"max_tokens":1}`, prompt)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	for _, tc := range []struct {
		name     string
		endpoint string
		ratio    float64
	}{{"off", "", 0}, {"ratio=0.1", rcv.URL, 0.1}, {"ratio=1", rcv.URL, 1}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := testConfig(up.URL)
			cfg.Observability.OTLPEndpoint, cfg.Observability.SampleRatio = tc.endpoint, tc.ratio
			bal, front := newBenchBalancer(b, cfg)
			defer front.Close()
			defer bal.proxy.Close()
			defer bal.shutdownTracer()
			url := front.URL + "/v1/chat/completions"
			b.ReportAllocs()
			cpu0 := cpuTime()
			defer func() { reportCPU(b, cpu0) }()
			for b.Loop() {
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkTraceHooks is tracing's own work per request, without the HTTP
// hops that blur BenchmarkTracing on a shared machine: the server span
// (continuing a client's unsampled or absent traceparent), one attempt span
// with the decision, the upstream traceparent and both ends, as forward and
// try run them. Spans are exported to an OTLP receiver on loopback.
func BenchmarkTraceHooks(b *testing.B) {
	rcv := discardCollector()
	defer rcv.Close()
	up := httptest.NewServer(http.HandlerFunc(okHandler))
	defer up.Close()
	for _, tc := range []struct {
		name     string
		endpoint string
		ratio    float64
	}{{"off", "", 0}, {"ratio=0.1", rcv.URL, 0.1}, {"ratio=1", rcv.URL, 1}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := testConfig(up.URL)
			cfg.Observability.OTLPEndpoint, cfg.Observability.SampleRatio = tc.endpoint, tc.ratio
			bal, err := New(cfg, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer bal.proxy.Close()
			defer bal.shutdownTracer()
			rep := bal.fleet.Snapshot().Replicas[0]
			m := bal.cur().models.configured("m")
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			cpu0 := cpuTime()
			defer func() { reportCPU(b, cpu0) }()
			for b.Loop() {
				rq := request{id: "id", kind: kindChat, mode: modeProxy, model: m, outcome: outcomeOK}
				rw, rr := http.ResponseWriter(w), r
				var rs reqSpan
				if bal.tr != nil {
					rw, rr, rs = bal.traceRequest(w, r, rq.id)
				}
				ar, span := bal.traceAttempt(rr, &rq, 4, rep, &route.Decision{Reason: "best_score", CachedTokens: 512}, 1)
				hdr := http.Header{HeaderRequestID: {rq.id}}
				tp, ts := bal.tr.Traceparent(ar.Context())
				setTraceHeaders(hdr, tp, ts)
				bal.endAttempt(span, &rq, true, "", nil, nil)
				_ = rw
				if bal.tr != nil {
					bal.endRequest(rs, &rq)
				}
			}
		})
	}
}
