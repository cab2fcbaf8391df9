package balancer

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/openai"
)

// FuzzAdminEndpoints: whatever the method, path, query and body sent to the
// admin port (reload, replicas, config, docs, gossip views, metrics), the
// balancer never panics or answers 5xx, and its 4xx answers other than the
// mux's own 404 and 405 are OpenAI errors.
func FuzzAdminEndpoints(f *testing.F) {
	for _, s := range []string{
		"GET /v1/config?format=yaml", "GET /v1/config?format=json&x=%zz", "GET /v1/replicas?model=m",
		"POST /admin/reload", "GET /docs", "GET /docs/../../etc/passwd", "GET /docs/routing.md",
		"GET /docs/%2e%2e/go.mod", "GET /metrics?name[]=x", "GET /healthz", "GET /v1/gossip/members",
	} {
		f.Add(s, []byte("{}"))
	}
	up := httptest.NewServer(http.HandlerFunc(okHandler))
	defer up.Close()
	b, err := New(testConfig(up.URL), nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer b.proxy.Close()
	h := b.AdminHandler()
	f.Fuzz(func(t *testing.T, line string, body []byte) {
		method, target, ok := strings.Cut(line, " ")
		if !ok || method == "" || !strings.HasPrefix(target, "/") {
			return
		}
		req, err := http.NewRequest(method, "http://admin"+target, strings.NewReader(string(body)))
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
			if _, ok := openai.ParseError(rec.Body.Bytes()); !ok {
				t.Fatalf("%s %s: %d without an OpenAI error: %q", method, target, rec.Code, rec.Body)
			}
		}
	})
}

// FuzzDecodeConfig: any YAML document decodes to a config or an error, and
// Validate reports on whatever decoded, never panicking.
func FuzzDecodeConfig(f *testing.F) {
	for _, s := range []string{
		"listen: 127.0.0.1:8080\nmodels:\n  - name: m\n    tokenizer: builtin:sim\n",
		"gossip:\n  enabled: true\n  join: [a:1]\n  load_max_age: 1s\n",
		"replicas:\n  - name: r\n    url: http://x:1\n    models: [m]\n",
		"retry:\n  max_attempts: 0\n  backof: 1s\n", "{}", "- a\n- b\n", "a: &x [*x]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeConfig(b, DefaultConfig())
		if err != nil {
			return
		}
		_ = c.Validate()
	})
}
