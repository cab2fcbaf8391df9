package balancer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/balancer/gateway"
	"github.com/inferrail/inferrail/internal/openai"
)

// send does one request with headers and returns the response and body.
func send(t *testing.T, method, url, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// wantError checks an OpenAI-shaped error of the given status and type.
func wantError(t *testing.T, resp *http.Response, body string, status int, typ string) *openai.Error {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, status, body)
	}
	e, ok := openai.ParseError([]byte(body))
	if !ok || e.Type != typ || e.Status != status {
		t.Fatalf("error body = %s, want type %s code %d", body, typ, status)
	}
	return e
}

func keysConfig(urls ...string) Config {
	cfg := testConfig(urls...)
	m2 := defaultModel()
	m2.Name = "m2"
	cfg.Models = append(cfg.Models, m2)
	for i := range cfg.Replicas {
		cfg.Replicas[i].Models = []string{"m", "m2"}
	}
	cfg.Gateway.Auth.Keys = []gateway.KeyConfig{
		{Name: "team-a", Key: "sk-a", Models: []string{"alias-m"}},
		{Name: "team-b", SHA256: sha256Hex("sk-b")},
	}
	cfg.Gateway.Auth.AdminToken = "adm"
	return cfg
}

func TestAPIKeys(t *testing.T) {
	up := newUpstream(t, okHandler)
	_, srv := newTestBalancer(t, keysConfig(up.srv.URL))
	chat := srv.URL + "/v1/chat/completions"

	resp, body := send(t, "POST", chat, chatBody)
	e := wantError(t, resp, body, 401, openai.TypeAuthentication)
	if !strings.Contains(e.Message, "didn't provide an API key") || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("no-key 401: %s, %v", body, resp.Header)
	}
	resp, body = send(t, "POST", chat, chatBody, "Authorization", "Bearer sk-wrong")
	wantError(t, resp, body, 401, openai.TypeAuthentication)
	resp, body = send(t, "GET", srv.URL+"/v1/models", "")
	wantError(t, resp, body, 401, openai.TypeAuthentication)

	resp, body = send(t, "POST", chat, chatBody, "Authorization", "Bearer sk-a")
	if resp.StatusCode != 200 {
		t.Fatalf("team-a on m (listed as alias-m): %d %s", resp.StatusCode, body)
	}
	got := <-up.hits
	<-up.bodies
	if got.Header.Get("Authorization") != "" || got.Header.Get("X-Api-Key") != "" {
		t.Errorf("the client's key reached the replica: %v", got.Header)
	}
	resp, body = send(t, "POST", chat, strings.Replace(chatBody, `"m"`, `"m2"`, 1), "X-Api-Key", "sk-a")
	e = wantError(t, resp, body, 403, openai.TypePermissionDenied)
	if e.Param != "model" {
		t.Errorf("403 param = %q, want model", e.Param)
	}
	resp, body = send(t, "POST", chat, strings.Replace(chatBody, `"m"`, `"m2"`, 1), "X-Api-Key", "sk-b")
	if resp.StatusCode != 200 {
		t.Fatalf("team-b (every model) on m2: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, "GET", srv.URL+"/v1/models", "", "Authorization", "Bearer sk-a")
	var list openai.ModelList
	if err := json.Unmarshal([]byte(body), &list); err != nil || resp.StatusCode != 200 {
		t.Fatalf("models: %d %s", resp.StatusCode, body)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "m,alias-m" {
		t.Errorf("team-a sees models %v, want [m alias-m]", ids)
	}
	if resp, _ := send(t, "GET", srv.URL+"/health", ""); resp.StatusCode != 200 {
		t.Errorf("/health needs a key: %d", resp.StatusCode)
	}
}

func TestRateLimitRequests(t *testing.T) {
	up := newUpstream(t, okHandler)
	cfg := keysConfig(up.srv.URL)
	cfg.Gateway.Auth.Keys[1].Limits = &gateway.Limits{RequestsPerSecond: 0.001, Burst: 2}
	_, srv := newTestBalancer(t, cfg)
	chat := srv.URL + "/v1/chat/completions"
	for i, want := range []string{"1", "0"} {
		resp, body := send(t, "POST", chat, chatBody, "Authorization", "Bearer sk-b")
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		if got := resp.Header.Get(gateway.HeaderRemainingRequests); got != want {
			t.Errorf("request %d: remaining = %q, want %q", i, got, want)
		}
		if resp.Header.Get(gateway.HeaderLimitRequests) != "2" || resp.Header.Get(gateway.HeaderResetRequests) == "" {
			t.Errorf("request %d: headers %v", i, resp.Header)
		}
		if resp.Header.Get(gateway.HeaderLimitTokens) != "" {
			t.Errorf("token headers without a token limit: %v", resp.Header)
		}
	}
	resp, body := send(t, "POST", chat, chatBody, "Authorization", "Bearer sk-b")
	e := wantError(t, resp, body, 429, openai.TypeRateLimit)
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
	}
	if !strings.Contains(e.Message, "team-b on requests") || resp.Header.Get(gateway.HeaderRemainingRequests) != "0" {
		t.Errorf("429: %s %v", body, resp.Header)
	}
	// Another key has its own buckets.
	if resp, body := send(t, "POST", chat, chatBody, "Authorization", "Bearer sk-a"); resp.StatusCode != 200 {
		t.Errorf("team-a limited by team-b's bucket: %d %s", resp.StatusCode, body)
	}
}

// sseHandler streams n content chunks without usage.
func sseHandler(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range n {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d\"}}]}\n\n", i)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

func TestRateLimitTokensCountsStreamedCompletions(t *testing.T) {
	up := newUpstream(t, sseHandler(25))
	cfg := testConfig(up.srv.URL)
	// Keyless: the limit applies per client IP. One token a minute refills
	// nothing during the test.
	cfg.Gateway.RateLimits.Default = gateway.Limits{TokensPerMinute: 1, TokenBurst: 1000}
	_, srv := newTestBalancer(t, cfg)
	chat := srv.URL + "/v1/chat/completions"
	stream := strings.Replace(chatBody, `"max_tokens":3`, `"max_tokens":25,"stream":true`, 1)
	resp, body := send(t, "POST", chat, stream)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	prompt, _ := strconv.Atoi(resp.Header.Get(HeaderPromptTokens))
	first, _ := strconv.Atoi(resp.Header.Get(gateway.HeaderRemainingTokens))
	if prompt == 0 || first != 1000-prompt {
		t.Fatalf("remaining after the first prompt = %d, want 1000-%d", first, prompt)
	}
	resp, _ = send(t, "POST", chat, stream)
	second, _ := strconv.Atoi(resp.Header.Get(gateway.HeaderRemainingTokens))
	if want := first - 25 - prompt; second != want {
		t.Errorf("remaining after the second prompt = %d, want %d (25 streamed tokens charged)", second, want)
	}
	if resp.Header.Get(gateway.HeaderLimitTokens) != "1000" {
		t.Errorf("limit-tokens = %q", resp.Header.Get(gateway.HeaderLimitTokens))
	}
	// A prompt larger than the bucket can never pass.
	big := fmt.Sprintf(`{"model":"m","prompt":%q}`, strings.Repeat("word ", 3000))
	resp, body = send(t, "POST", srv.URL+"/v1/completions", big)
	e := wantError(t, resp, body, 429, openai.TypeRateLimit)
	if !strings.Contains(e.Message, "Request too large") {
		t.Errorf("oversized prompt: %s", body)
	}
}

func TestProviderReplica(t *testing.T) {
	up := newUpstream(t, okHandler)
	cfg := keysConfig(up.srv.URL)
	cfg.Replicas[0].APIKey = "provider-secret"
	cfg.Replicas[0].PathPrefix = "/openai/v1"
	_, srv := newTestBalancer(t, cfg)
	resp, body := send(t, "POST", srv.URL+"/v1/chat/completions", chatBody, "X-Api-Key", "sk-b")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	got := <-up.hits
	if got.URL.Path != "/openai/v1/chat/completions" {
		t.Errorf("upstream path = %q, want /openai/v1/chat/completions", got.URL.Path)
	}
	if got.Header.Get("Authorization") != "Bearer provider-secret" || got.Header.Get("X-Api-Key") != "" {
		t.Errorf("upstream credentials = %v", got.Header)
	}
}

func TestCORSPreflightOnTheClientPort(t *testing.T) {
	up := newUpstream(t, okHandler)
	cfg := keysConfig(up.srv.URL)
	cfg.Gateway.CORS.AllowedOrigins = []string{"https://app.example"}
	_, srv := newTestBalancer(t, cfg)
	resp, _ := send(t, "OPTIONS", srv.URL+"/v1/chat/completions", "", "Origin", "https://app.example",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		resp.Header.Get("Access-Control-Allow-Headers") != "authorization, content-type" {
		t.Errorf("preflight (no key needed): %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = send(t, "POST", srv.URL+"/v1/chat/completions", chatBody, "Origin", "https://app.example", "Authorization", "Bearer sk-b")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), gateway.HeaderRemainingRequests) {
		t.Errorf("simple request: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestAdminIntrospectionAndReload(t *testing.T) {
	up := newUpstream(t, okHandler)
	cfg := keysConfig("http://user:pw-secret@" + strings.TrimPrefix(up.srv.URL, "http://"))
	cfg.Replicas[0].APIKey = "provider-secret"
	cfg.Gateway.RateLimits.Redis.Password = "redis-secret"
	b, err := New(cfg, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	admin := newAdminServer(t, b)
	_, body := send(t, "GET", admin.URL+"/v1/config", "")
	for _, secret := range []string{"sk-a", sha256Hex("sk-b"), "adm\"", "provider-secret", "pw-secret", "redis-secret"} {
		if strings.Contains(body, secret) {
			t.Errorf("/v1/config shows %q:\n%s", secret, body)
		}
	}
	var c map[string]any
	if err := json.Unmarshal([]byte(body), &c); err != nil || c["listen"] == nil || c["auth"] == nil {
		t.Fatalf("/v1/config is not the config as JSON: %v\n%s", err, body)
	}
	_, body = send(t, "GET", admin.URL+"/v1/replicas", "")
	var reps []ReplicaInfo
	if err := json.Unmarshal([]byte(body), &reps); err != nil || len(reps) != 1 {
		t.Fatalf("/v1/replicas: %v %s", err, body)
	}
	if r := reps[0]; r.Name != "r0" || strings.Contains(r.URL, "pw-secret") || r.Health != "healthy" || len(r.Models) != 2 {
		t.Errorf("replica = %+v", r)
	}
	resp, body := send(t, "GET", admin.URL+"/docs", "")
	if resp.StatusCode != 200 || !strings.Contains(body, "gateway.md") {
		t.Errorf("/docs index: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, "GET", admin.URL+"/docs/gateway.md", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/markdown") || !strings.Contains(body, "# ") {
		t.Errorf("/docs/gateway.md: %d %v", resp.StatusCode, resp.Header)
	}
	for _, p := range []string{"/docs/nope.md", "/docs/../go.mod", "/docs/embed.go"} {
		if resp, _ := send(t, "GET", admin.URL+p, ""); resp.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", p, resp.StatusCode)
		}
	}

	next := cfg
	b.SetReloadSource(func() (Config, error) { return next, nil })
	resp, body = send(t, "POST", admin.URL+"/admin/reload", "")
	wantError(t, resp, body, 403, openai.TypePermissionDenied)
	resp, body = send(t, "POST", admin.URL+"/admin/reload", "", "Authorization", "Bearer wrong")
	wantError(t, resp, body, 403, openai.TypePermissionDenied)

	bad := cfg
	bad.Replicas = []ReplicaConfig{{Name: "", URL: "ftp://x", Models: nil}}
	bad.Gateway.RateLimits.Default.RequestsPerSecond = -1
	next = bad
	resp, body = send(t, "POST", admin.URL+"/admin/reload", "", "Authorization", "Bearer adm")
	e := wantError(t, resp, body, 400, openai.TypeBadRequest)
	for _, want := range []string{"replicas[0].name", "replicas[0].url", "replicas[0].models", "rate_limits.default.requests_per_second", "running config stays"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("reload error does not name %s:\n%s", want, e.Message)
		}
	}
	if got := b.Fleet().Snapshot().Replicas; len(got) != 1 || got[0].ID != "r0" {
		t.Errorf("a refused reload changed the replicas: %v", got)
	}

	good := cfg
	good.Replicas = []ReplicaConfig{{Name: "r9", URL: up.srv.URL, Models: []string{"m"}}}
	good.Gateway.Auth.Keys = []gateway.KeyConfig{{Name: "team-c", Key: "sk-c"}}
	good.Listen = "127.0.0.1:1"
	next = good
	resp, body = send(t, "POST", admin.URL+"/admin/reload", "", "Authorization", "Bearer adm")
	var res ReloadResult
	if err := json.Unmarshal([]byte(body), &res); err != nil || resp.StatusCode != 200 {
		t.Fatalf("reload: %d %s", resp.StatusCode, body)
	}
	if res.Replicas != 1 || res.Keys != 1 || strings.Join(res.Restart, ",") != "listen" {
		t.Errorf("reload result = %+v", res)
	}
	client := httptest.NewServer(b.Handler())
	defer client.Close()
	if resp, _ := send(t, "POST", client.URL+"/v1/chat/completions", chatBody, "Authorization", "Bearer sk-a"); resp.StatusCode != 401 {
		t.Errorf("a removed key still works: %d", resp.StatusCode)
	}
	resp, body = send(t, "POST", client.URL+"/v1/chat/completions", chatBody, "Authorization", "Bearer sk-c")
	if resp.StatusCode != 200 || resp.Header.Get(HeaderReplica) != "r9" {
		t.Errorf("after reload: %d %s via %q", resp.StatusCode, body, resp.Header.Get(HeaderReplica))
	}
	if b.cur().cfg.Listen != cfg.Listen {
		t.Errorf("listen changed by a reload: %q", b.cur().cfg.Listen)
	}
}

func sha256Hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// TestGatewayDocExample checks that the example config of docs/gateway.md
// and its keys file are valid.
func TestGatewayDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/gateway.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(doc), "```yaml\n")[1:] {
		blocks = append(blocks, part[:strings.Index(part, "```")])
	}
	if len(blocks) < 2 {
		t.Fatalf("docs/gateway.md has %d yaml blocks, want the config and its keys file", len(blocks))
	}
	cfg, err := DecodeConfig([]byte(blocks[0]), DefaultConfig())
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("example config invalid: %v", err)
	}
	keys, err := gateway.ParseKeysFile([]byte(blocks[1]))
	if err != nil || len(keys) != 2 {
		t.Errorf("example keys file: %v", err)
	}
}

// TestReloadWhileServing swaps replicas, keys and limits back and forth
// while requests flow (run it with -race): every request succeeds.
func TestReloadWhileServing(t *testing.T) {
	a, c := newUpstream(t, okHandler), newUpstream(t, okHandler)
	go func() { // drain the recorders
		for {
			select {
			case <-a.hits:
				<-a.bodies
			case <-c.hits:
				<-c.bodies
			}
		}
	}()
	cfgA := keysConfig(a.srv.URL)
	cfgC := keysConfig(c.srv.URL)
	cfgC.Replicas[0].Name = "r9"
	cfgC.Gateway.RateLimits.Default = gateway.Limits{RequestsPerSecond: 1e6, TokensPerMinute: 1e12}
	cfgC.Models[0].Routing.Policy = "round_robin"
	b, srv := newTestBalancer(t, cfgA)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(chatBody))
				req.Header.Set("Authorization", "Bearer sk-b")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
					t.Errorf("status %d: %s", resp.StatusCode, body)
				}
			}
		})
	}
	for i := range 20 {
		next := cfgA
		if i%2 == 0 {
			next = cfgC
		}
		if _, err := b.Reload(next); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
	}
	close(done)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d requests failed while reloading", n)
	}
}
