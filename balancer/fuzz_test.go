package balancer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/openai"
)

// FuzzMalformedRequests: whatever the body, path and method, the balancer
// itself never answers 5xx (the fake upstream answers 200), and every 4xx is
// in the OpenAI error shape.
func FuzzMalformedRequests(f *testing.F) {
	for _, s := range []string{
		chatBody, `{"model":"m","prompt":"x"}`, `{"model":"alias-m","prompt":[1,2,3]}`, `{"model":null}`,
		`{}`, `[]`, `"x"`, `{"model":"m","messages":"nope"}`, `{"model":"m","prompt":[[1],[2]]}`,
		`{"model":"m","cache_salt":5}`, "\xff\xfe", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`,
	} {
		f.Add(uint8(0), []byte(s))
		f.Add(uint8(1), []byte(s))
	}
	up := httptest.NewServer(http.HandlerFunc(okHandler))
	defer up.Close()
	b, err := New(testConfig(up.URL), nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer b.proxy.Close()
	h := b.Handler()
	paths := []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models", "/health", "/x"}
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		method := "POST"
		if sel&0x80 != 0 {
			method = "GET"
		}
		req := httptest.NewRequest(method, paths[int(sel&0x7f)%len(paths)], bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: status %d: %s", method, req.URL.Path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			if _, ok := openai.ParseError(rec.Body.Bytes()); !ok {
				t.Fatalf("%s %s %q: %d not in OpenAI shape: %s", method, req.URL.Path, body, rec.Code, rec.Body)
			}
		}
	})
}

// TestPicksOnlyEligibleReplicas is a property test through the whole
// handler: over random fleets (models, caps held full, ejected replicas) and
// every policy and peer baseline, a request is only ever sent to a healthy replica below its
// caps that serves the model, and gets 503 only when none is.
func TestPicksOnlyEligibleReplicas(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(okHandler))
	defer up.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	policies := append(slices.Clone(route.Policies), route.Baselines...)
	for trial := range 80 {
		policy := policies[trial%len(policies)]
		cfg := testConfig()
		cfg.Models[0].Routing.Policy = policy
		other := defaultModel()
		other.Name = "other"
		cfg.Models = append(cfg.Models, other)
		cfg.Health.FailureThreshold = 1
		cfg.Health.MaxEjectedShare = 1
		n := 1 + rng.IntN(6)
		for i := range n {
			models := []string{"m"}
			if rng.IntN(3) == 0 {
				models = []string{"other"}
			}
			cfg.Replicas = append(cfg.Replicas, ReplicaConfig{Name: fmt.Sprintf("r%d", i), URL: up.URL, Models: models,
				MaxConcurrency: rng.IntN(3), MaxPending: rng.IntN(3)})
		}
		b, err := New(cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		eligible := map[string]bool{}
		snap := b.fleet.Snapshot()
		for i, r := range snap.Replicas {
			switch rng.IntN(3) {
			case 0: // hold it full
				for _, ok := r.TryAcquire(0, 0); ok; _, ok = r.TryAcquire(0, 0) {
					if r.MaxConcurrency == 0 && r.MaxPending == 0 {
						b.fleet.ReportFailure(r) // uncapped: eject it instead
						break
					}
				}
			case 1:
				b.fleet.ReportFailure(r)
			default:
				eligible[r.ID] = cfg.Replicas[i].Models[0] == "m"
			}
		}
		for k := range eligible {
			if !eligible[k] {
				delete(eligible, k)
			}
		}
		for range 5 {
			rec := httptest.NewRecorder()
			b.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/completions", bytes.NewReader([]byte(`{"model":"m","prompt":"hello"}`))))
			got := rec.Header().Get(HeaderReplica)
			switch {
			case len(eligible) == 0 && rec.Code != http.StatusServiceUnavailable:
				t.Fatalf("trial %d (%s): nothing eligible, got %d from %q", trial, policy, rec.Code, got)
			case len(eligible) > 0 && (rec.Code != 200 || !eligible[got]):
				t.Fatalf("trial %d (%s): sent to %q (status %d), eligible %v", trial, policy, got, rec.Code, eligible)
			}
		}
		b.proxy.Close()
	}
}

// FuzzExplain: whatever the body and route, POST /v1/explain never answers
// 5xx with a healthy replica, never sends upstream, and every 4xx is in the
// OpenAI error shape.
func FuzzExplain(f *testing.F) {
	for _, s := range []string{chatBody, `{"model":"m","prompt":"x"}`, `{"model":"m","prompt":[1,2,3]}`, `{}`, `[]`,
		`{"model":"m","messages":"nope"}`, `{"messages":[]}`, "\xff", `{"model":"zz","prompt":"x"}`} {
		f.Add(uint8(0), []byte(s))
		f.Add(uint8(1), []byte(s))
		f.Add(uint8(2), []byte(s))
	}
	var sent atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		okHandler(w, r)
	}))
	defer up.Close()
	b, err := New(testConfig(up.URL), nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer b.proxy.Close()
	h := b.AdminHandler()
	routes := []string{"", "?route=chat", "?route=completions"}
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		req := httptest.NewRequest("POST", "/v1/explain"+routes[int(sel)%len(routes)], bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q: status %d: %s", body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			if _, ok := openai.ParseError(rec.Body.Bytes()); !ok {
				t.Fatalf("%q: %d not in OpenAI shape: %s", body, rec.Code, rec.Body)
			}
		}
		if n := sent.Load(); n != 0 {
			t.Fatalf("explain sent %d requests upstream", n)
		}
	})
}
