package balancer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestGatewayDocResponseCacheConfigs decodes and validates every config
// of docs/gateway.md#response-caches, so the working configs stay working;
// a fragment without listen: is completed with the first config's other
// sections.
func TestGatewayDocResponseCacheConfigs(t *testing.T) {
	b, err := os.ReadFile("../docs/gateway.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## Response caches\n")
	if i < 0 {
		t.Fatal("docs/gateway.md has no Response caches section")
	}
	doc = doc[i+1:]
	if j := strings.Index(doc[3:], "\n## "); j >= 0 {
		doc = doc[:j+3]
	}
	var blocks []string
	for rest := doc; ; {
		k := strings.Index(rest, "```yaml\n")
		if k < 0 {
			break
		}
		rest = rest[k+len("```yaml\n"):]
		end := strings.Index(rest, "```")
		blocks = append(blocks, rest[:end])
		rest = rest[end+3:]
	}
	if len(blocks) < 3 {
		t.Fatalf("found %d yaml blocks, want the exact, semantic and Redis configs", len(blocks))
	}
	base := blocks[0][:strings.Index(blocks[0], "response_cache:")]
	for n, y := range blocks {
		if !strings.Contains(y, "listen:") {
			y = base + y
		}
		cfg, err := DecodeConfig([]byte(y), DefaultConfig())
		if err != nil {
			t.Errorf("block %d: %v\n%s", n, err, y)
			continue
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("block %d: %v\n%s", n, err, y)
		}
		if !cfg.ResponseCache.On() {
			t.Errorf("block %d turns no cache on", n)
		}
	}
}

// TestConfigRedactsCacheSecrets: GET /v1/config shows no secret of the
// response cache.
func TestConfigRedactsCacheSecrets(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	rc := &cfg.ResponseCache
	rc.Exact.Enabled = true
	rc.Redis.Addr, rc.Redis.Password = "127.0.0.1:1", "redis-secret"
	rc.Semantic.Embeddings.URL, rc.Semantic.Embeddings.APIKey = "http://user:url-secret@embedder:8000", "sk-embed-secret"
	b, _ := newTestBalancer(t, cfg)
	srv := httptest.NewServer(b.AdminHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/config?format=yaml")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, secret := range []string{"redis-secret", "url-secret", "sk-embed-secret"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("/v1/config shows %q:\n%s", secret, body)
		}
	}
	if !strings.Contains(string(body), "response_cache:") {
		t.Errorf("/v1/config has no response_cache:\n%s", body)
	}
}
