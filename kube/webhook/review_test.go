package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/inferrail/inferrail/kube/inject"
)

func testServer(t testing.TB) *Server {
	reg := prometheus.NewRegistry()
	s := &Server{opts: inject.DefaultOptions("v1.0.0"), log: slog.New(slog.NewTextHandler(io.Discard, nil)), gather: reg}
	s.metrics.reviews = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inferrail_webhook_reviews_total"}, []string{"outcome"})
	reg.MustRegister(s.metrics.reviews)
	return s
}

const seedReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",
"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
"namespace":"ml","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"v-"},
"spec":{"containers":[{"name":"vllm","image":"x","args":["vllm","serve","m","--port","8000"]}]}}}}`

// FuzzAdmissionReview sends arbitrary bodies to /inject: the answer is a
// 4xx with a reason, or a 200 AdmissionReview that allows the pod and whose
// patch, if any, applies to the object sent.
func FuzzAdmissionReview(f *testing.F) {
	f.Add([]byte(seedReview))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"metadata":{"annotations":{"a":"b"}},"spec":{"volumes":[{"name":"v"}],"containers":[{"name":"s","command":["sh","-c","python -m sglang.launch_server --enable-metrics --port 1"]}]}}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":null}}`))
	f.Add([]byte(`[]`))
	h := testServer(f).Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/inject", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			if rec.Code < 400 || rec.Code >= 500 || rec.Body.Len() == 0 {
				t.Fatalf("status %d body %q", rec.Code, rec.Body.String())
			}
			return
		}
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("response is not an AdmissionReview: %v", err)
		}
		if out.Response == nil || !out.Response.Allowed {
			t.Fatalf("pod not allowed: %s", rec.Body.String())
		}
		if len(out.Response.Patch) == 0 {
			return
		}
		in, err := DecodeReview(body)
		if err != nil {
			t.Fatalf("a patch for a body DecodeReview rejects: %v", err)
		}
		p, err := jsonpatch.DecodePatch(out.Response.Patch)
		if err != nil {
			t.Fatalf("bad patch: %v", err)
		}
		if _, err := p.Apply(in.Request.Object.Raw); err != nil {
			t.Fatalf("the patch does not apply to the object: %v\n%s\n%s", err, out.Response.Patch, in.Request.Object.Raw)
		}
	})
}
