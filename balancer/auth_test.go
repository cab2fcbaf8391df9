package balancer

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAPIKeys(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"text_completion","choices":[]}`)
	})
	keys := filepath.Join(t.TempDir(), "api-keys")
	if err := os.WriteFile(keys, []byte("# team a\nkey-a\n\n  key-b  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(up.srv.URL)
	cfg.Auth.APIKeysFile = keys
	_, srv := newTestBalancer(t, cfg)
	do := func(path, auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(`{"model":"m","prompt":"hi","max_tokens":1}`))
		if path == "/health" || path == "/v1/models" {
			req.Method = http.MethodGet
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, auth := range []string{"", "Bearer wrong", "key-a", "Basic key-a", "Bearer key-a-and-more"} {
		code, body := do("/v1/completions", auth)
		var e struct {
			Error struct {
				Message string `json:"message"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		if code != http.StatusUnauthorized || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != 401 || !strings.Contains(e.Error.Message, "API key") {
			t.Errorf("Authorization %q: %d %s, want a 401 OpenAI error", auth, code, body)
		}
		if code, _ := do("/v1/models", auth); code != http.StatusUnauthorized {
			t.Errorf("GET /v1/models with %q: %d", auth, code)
		}
	}
	for _, auth := range []string{"Bearer key-a", "Bearer key-b"} {
		if code, body := do("/v1/completions", auth); code != http.StatusOK {
			t.Errorf("Authorization %q: %d %s", auth, code, body)
		}
	}
	if code, _ := do("/health", ""); code == http.StatusUnauthorized {
		t.Errorf("/health needs a key")
	}
}

func TestAPIKeysFileErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	_ = os.WriteFile(empty, []byte("# nothing\n\n"), 0o600)
	for _, path := range []string{empty, "/nonexistent/keys"} {
		cfg := testConfig("http://127.0.0.1:1")
		cfg.Auth.APIKeysFile = path
		if err := cfg.Preflight(); err == nil || !strings.Contains(err.Error(), "auth.api_keys_file") {
			t.Errorf("Preflight with %s: %v", path, err)
		}
		if _, err := New(cfg, nil, nil); err == nil {
			t.Errorf("New with %s: no error", path)
		}
	}
}
