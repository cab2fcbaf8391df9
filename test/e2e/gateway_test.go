package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/redistest"
)

// gwBalancer is a balancer started from a config file the test may rewrite.
type gwBalancer struct {
	*btBalancer
	config string // path of its config file
	body   string // the config without listen and admin
}

// gwStartBalancer starts a balancer whose config is listen + admin + body.
func gwStartBalancer(t *testing.T, bin, name, body string) *gwBalancer {
	t.Helper()
	l, a := scFreePort(t), scFreePort(t)
	b := &gwBalancer{btBalancer: &btBalancer{url: fmt.Sprintf("http://127.0.0.1:%d", l), admin: fmt.Sprintf("http://127.0.0.1:%d", a)},
		config: filepath.Join(t.TempDir(), name+".yaml")}
	b.write(t, body)
	b.proc = scStart(t, bin, name, "balancer", "--config", b.config, "--log-level", "debug")
	scWait(t, name+" ready", func() error {
		resp, err := http.Get(b.url + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})
	return b
}

// write replaces the balancer's config file (listen and admin kept).
func (b *gwBalancer) write(t *testing.T, body string) {
	t.Helper()
	b.body = body
	full := fmt.Sprintf("listen: %s\nadmin: %s\n%s", strings.TrimPrefix(b.url, "http://"), strings.TrimPrefix(b.admin, "http://"), body)
	if err := os.WriteFile(b.config+".tmp", []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(b.config+".tmp", b.config); err != nil {
		t.Fatal(err)
	}
}

// gwStartSim starts a simulator serving e2e-model without KV events.
func gwStartSim(t *testing.T, bin, name string, extra ...string) *scSim {
	t.Helper()
	s := &scSim{bin: bin, port: scFreePort(t)}
	s.url = fmt.Sprintf("http://127.0.0.1:%d", s.port)
	args := append([]string{"sim", "--host", "127.0.0.1", "--port", strconv.Itoa(s.port), "--served-model-name", "e2e-model"}, extra...)
	s.proc = scStart(t, bin, name, args...)
	scWait(t, name+" health", func() error {
		resp, err := http.Get(s.url + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return s
}

// gwDo sends a completion with the given headers.
func gwDo(url string, body string, hdr ...string) (*http.Response, []byte, error) {
	req, err := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b, err
}

const gwPrompt = `{"model":"e2e-model","prompt":"a short prompt for the gateway tests","max_tokens":2}`

// gwError decodes an OpenAI-shaped error body.
func gwError(t *testing.T, b []byte) (typ string, code int, msg string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Type == "" {
		t.Fatalf("not an OpenAI error body: %s", b)
	}
	return e.Error.Type, e.Error.Code, e.Error.Message
}

func TestGatewayE2E(t *testing.T) {
	bin := scBuild(t)
	t.Run("keys and limits", func(t *testing.T) { gwKeys(t, bin) })
	t.Run("shared limit on one redis", func(t *testing.T) { gwShared(t, bin) })
	t.Run("reload under load", func(t *testing.T) { gwReload(t, bin) })
}

// gwKeys checks the 401, 403 and 429 answers and the rate-limit headers
// through the binary, with keys from a keys file.
func gwKeys(t *testing.T, bin string) {
	sim := gwStartSim(t, bin, "sim-keys", "--zero-latency")
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keys, []byte(`keys:
  - name: limited
    key: sk-limited
    limits: {requests_per_second: 0.01, burst: 2, tokens_per_minute: 6000}
  - name: other-model
    key: sk-other
    models: [some-other-model]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := gwStartBalancer(t, bin, "bal-keys", fmt.Sprintf(`gossip: {enabled: false}
health: {probe_interval: 0s}
models:
  - name: e2e-model
    tokenizer: builtin:sim
    aliases: [alias]
replicas:
  - {name: s0, url: %s, models: [e2e-model]}
auth:
  keys_file: %s
  admin_token: adm
`, sim.url, keys))

	resp, body, err := gwDo(b.url, gwPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if typ, code, _ := gwError(t, body); resp.StatusCode != 401 || typ != "AuthenticationError" || code != 401 {
		t.Errorf("no key: %d %s", resp.StatusCode, body)
	}
	resp, body, _ = gwDo(b.url, gwPrompt, "Authorization", "Bearer sk-nope")
	if resp.StatusCode != 401 {
		t.Errorf("wrong key: %d %s", resp.StatusCode, body)
	}
	resp, body, _ = gwDo(b.url, gwPrompt, "X-Api-Key", "sk-other")
	if typ, _, _ := gwError(t, body); resp.StatusCode != 403 || typ != "PermissionDeniedError" {
		t.Errorf("model not allowed: %d %s", resp.StatusCode, body)
	}
	for i := range 2 {
		resp, body, _ = gwDo(b.url, strings.Replace(gwPrompt, "e2e-model", "alias", 1), "Authorization", "Bearer sk-limited")
		if resp.StatusCode != 200 {
			t.Fatalf("request %d of the burst: %d %s", i, resp.StatusCode, body)
		}
		h := resp.Header
		if h.Get("X-Ratelimit-Limit-Requests") != "2" || h.Get("X-Ratelimit-Remaining-Requests") != strconv.Itoa(1-i) ||
			h.Get("X-Ratelimit-Limit-Tokens") != "6000" || h.Get("X-Ratelimit-Remaining-Tokens") == "" ||
			h.Get("X-Ratelimit-Reset-Requests") == "" || h.Get("X-Ratelimit-Reset-Tokens") == "" {
			t.Errorf("request %d: rate-limit headers %v", i, h)
		}
	}
	resp, body, _ = gwDo(b.url, gwPrompt, "Authorization", "Bearer sk-limited")
	typ, code, msg := gwError(t, body)
	if resp.StatusCode != 429 || typ != "RateLimitError" || code != 429 || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("X-Ratelimit-Remaining-Requests") != "0" || !strings.Contains(msg, "limited on requests") {
		t.Errorf("over the burst: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if got := btMetric(t, b.btBalancer, "inferrail_balancer_gateway_requests_total", `decision="limit_requests",key="limited"`); got != 1 {
		t.Errorf("limit_requests metric for key limited = %v, want 1", got)
	}
	// The admin port's reload needs the admin token once keys are on.
	req, _ := http.NewRequest("POST", b.admin+"/admin/reload", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("reload without the admin token: %v %v", resp, err)
	}
	req, _ = http.NewRequest("POST", b.admin+"/admin/reload", nil)
	req.Header.Set("Authorization", "Bearer adm")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("reload with the admin token: %v %v", resp, err)
	}
}

// gwShared runs three balancers on one Redis against one key: the requests
// they let through together never exceed rate × time + one burst. Then
// Redis stops: the fail-open balancers go on with their own memory (and
// say so in a metric), the fail-closed one answers 503.
//
// The Redis calls get a 2 s timeout, not the default 100 ms: a fail-open
// balancer whose call times out takes requests from its own bucket for
// retry_interval, as it should, and its burst then passes on top of the
// shared one. On a loaded 2-core machine that happened once (80 allowed
// against a bound of 70: exactly one more burst), so a stall of the machine
// is not taken for Redis being down, and the load phase checks that no
// balancer fell back.
func gwShared(t *testing.T, bin string) {
	redis := redistest.Start(t)
	sim := gwStartSim(t, bin, "sim-shared", "--zero-latency")
	const rate, burst = 20.0, 10
	cfg := func(failClosed bool) string {
		return fmt.Sprintf(`gossip: {enabled: false}
health: {probe_interval: 0s}
models: [{name: e2e-model, tokenizer: builtin:sim}]
replicas: [{name: s0, url: %s, models: [e2e-model]}]
auth:
  keys:
    - {name: shared, key: sk-shared, limits: {requests_per_second: %v, burst: %d}}
    - {name: slow, key: sk-slow, limits: {requests_per_second: 0.01, burst: 3}}
rate_limits:
  redis: {addr: %s, fail_closed: %v, retry_interval: 200ms, timeout: 2s}
`, sim.url, rate, burst, redis.Addr, failClosed)
	}
	var bals []*gwBalancer
	for i := range 3 {
		bals = append(bals, gwStartBalancer(t, bin, fmt.Sprintf("bal-shared-%d", i), cfg(false)))
	}
	closed := gwStartBalancer(t, bin, "bal-closed", cfg(true))

	var allowed, limited, other atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(3 * time.Second) // how long the load runs, not an assertion
	for _, b := range bals {
		for range 2 {
			wg.Go(func() {
				for time.Now().Before(stop) {
					resp, body, err := gwDo(b.url, gwPrompt, "Authorization", "Bearer sk-shared")
					switch {
					case err != nil:
						other.Add(1)
						t.Errorf("request failed: %v", err)
						return
					case resp.StatusCode == 200:
						allowed.Add(1)
					case resp.StatusCode == 429:
						limited.Add(1)
					default:
						other.Add(1)
						t.Errorf("status %d: %s", resp.StatusCode, body)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	bound := rate*elapsed + burst
	t.Logf("%d allowed, %d limited in %.2fs through 3 balancers; limit %.0f/s + burst %d = %.1f", allowed.Load(), limited.Load(), elapsed, rate, burst, bound)
	if float64(allowed.Load()) > bound+1 {
		t.Errorf("%d requests allowed in %.2fs, more than rate × time + one burst = %.1f", allowed.Load(), elapsed, bound)
	}
	if allowed.Load() < burst || limited.Load() == 0 {
		t.Errorf("allowed %d, limited %d: the limit did not act", allowed.Load(), limited.Load())
	}
	for _, b := range bals {
		if got := btMetric(t, b.btBalancer, "inferrail_balancer_ratelimit_store_up", ""); got != 1 {
			t.Errorf("%s: store_up = %v with Redis up", b.proc.name, got)
		}
		if got := btMetric(t, b.btBalancer, "inferrail_balancer_ratelimit_store_errors_total", ""); got != 0 {
			t.Errorf("%s: %v Redis errors with Redis up: it fell back to its own bucket, so the shared bound cannot hold", b.proc.name, got)
		}
	}

	redis.Stop()
	resp, body, err := gwDo(bals[0].url, gwPrompt, "Authorization", "Bearer sk-shared")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("fail open with Redis down: %v %d %s", err, resp.StatusCode, body)
	}
	if got := btMetric(t, bals[0].btBalancer, "inferrail_balancer_ratelimit_store_up", ""); got != 0 {
		t.Errorf("store_up = %v with Redis down", got)
	}
	if got := btMetric(t, bals[0].btBalancer, "inferrail_balancer_ratelimit_store_errors_total", ""); got < 1 {
		t.Errorf("store_errors_total = %v with Redis down", got)
	}
	if got := btMetric(t, bals[0].btBalancer, "inferrail_balancer_ratelimit_fallback_total", `mode="open"`); got < 1 {
		t.Errorf("fallback{mode=open} = %v", got)
	}
	// The local fallback still limits: the burst, then 429. The key's rate
	// refills a token every 100 s, so how fast the requests follow one
	// another does not matter (sk-shared's 20/s would refill the burst
	// between requests that take more than 4.5 ms each, as on a loaded
	// machine).
	var codes []int
	for range 5 {
		resp, body, err := gwDo(bals[1].url, gwPrompt, "Authorization", "Bearer sk-slow")
		if err != nil {
			t.Fatalf("with Redis down: %v", err)
		}
		if resp.StatusCode != 200 && resp.StatusCode != 429 {
			t.Fatalf("with Redis down: %d %s", resp.StatusCode, body)
		}
		codes = append(codes, resp.StatusCode)
	}
	if want := []int{200, 200, 200, 429, 429}; !slices.Equal(codes, want) {
		t.Errorf("with Redis down a fail-open balancer answered %v, want %v (its own burst of 3, then the limit)", codes, want)
	}
	resp, body, _ = gwDo(closed.url, gwPrompt, "Authorization", "Bearer sk-shared")
	if typ, _, _ := gwError(t, body); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || typ != "Service Unavailable" {
		t.Errorf("fail closed with Redis down: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if got := btMetric(t, closed.btBalancer, "inferrail_balancer_ratelimit_fallback_total", `mode="closed"`); got < 1 {
		t.Errorf("fallback{mode=closed} = %v", got)
	}
}

// gwReplicas returns name → health from GET /v1/replicas.
func gwReplicas(t *testing.T, b *gwBalancer) map[string]string {
	t.Helper()
	var reps []struct{ Name, Health string }
	if err := scGetJSON(b.admin+"/v1/replicas", &reps); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range reps {
		out[r.Name] = r.Health
	}
	return out
}

// gwReload keeps streaming and plain completions going through a balancer
// while its config adds a replica and drains one (SIGHUP), removes the
// drained one (POST /admin/reload) and is replaced by an invalid file
// (refused, with every error and its path, by both): no request fails.
func gwReload(t *testing.T, bin string) {
	var sims []*scSim
	for i := range 3 {
		sims = append(sims, gwStartSim(t, bin, fmt.Sprintf("sim-reload-%d", i)))
	}
	rep := func(i int, extra string) string {
		return fmt.Sprintf("  - {name: s%d, url: %s, models: [e2e-model]%s}\n", i, sims[i].url, extra)
	}
	head := "gossip: {enabled: false}\nhealth: {probe_interval: 200ms}\nmodels: [{name: e2e-model, tokenizer: builtin:sim}]\nreplicas:\n"
	b := gwStartBalancer(t, bin, "bal-reload", head+rep(0, "")+rep(1, ""))

	var mu sync.Mutex
	served := map[string]int{} // replica → responses, reset at each phase
	var ok, failed atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				stream := (w+i)%2 == 0
				body := fmt.Sprintf(`{"model":"e2e-model","prompt":"worker %d request %d","max_tokens":16,"ignore_eos":true,"stream":%v}`, w, i, stream)
				resp, data, err := gwDo(b.url, body)
				if err == nil && resp.StatusCode == 200 && stream && !strings.Contains(string(data), "[DONE]") {
					err = fmt.Errorf("stream ended without [DONE]: %q", data)
				}
				if err != nil || resp.StatusCode != 200 {
					failed.Add(1)
					status := 0
					if resp != nil {
						status = resp.StatusCode
					}
					t.Errorf("request failed during reloads: status %d err %v body %s", status, err, data)
					continue
				}
				ok.Add(1)
				mu.Lock()
				served[resp.Header.Get("X-Inferrail-Replica")]++
				mu.Unlock()
			}
		})
	}
	phase := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := served
		served = map[string]int{}
		return out
	}
	waitServed := func(name string) {
		scWait(t, name+" serves", func() error {
			mu.Lock()
			defer mu.Unlock()
			if served[name] < 5 {
				return fmt.Errorf("%d responses from %s", served[name], name)
			}
			return nil
		})
	}
	reloads := func() float64 {
		return btMetric(t, b.btBalancer, "inferrail_balancer_config_reloads_total", `result="ok"`)
	}
	waitServed("s0")
	waitServed("s1")

	// SIGHUP: add s2, drain s0.
	b.write(t, head+rep(0, ", drain: true")+rep(1, "")+rep(2, ""))
	_ = b.proc.cmd.Process.Signal(syscall.SIGHUP)
	scWait(t, "s0 draining and s2 in", func() error {
		if h := gwReplicas(t, b); h["s0"] != "draining" || h["s2"] != "healthy" {
			return fmt.Errorf("replicas %v", h)
		}
		return nil
	})
	phase()
	waitServed("s2")

	// POST /admin/reload: remove s0.
	b.write(t, head+rep(1, "")+rep(2, ""))
	resp, err := http.Post(b.admin+"/admin/reload", "", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST /admin/reload: %v %v", resp, err)
	}
	resp.Body.Close()
	if h := gwReplicas(t, b); len(h) != 2 || h["s0"] != "" {
		t.Errorf("after removing s0: %v", h)
	}
	phase()
	waitServed("s1")
	waitServed("s2")

	// An invalid file: refused by POST /admin/reload with every error and
	// its path, and by SIGHUP; the old config stays.
	before := reloads()
	b.write(t, head+"  - {name: s1, url: ftp://nowhere, models: []}\n  - {name: s1, url: "+sims[2].url+", models: [e2e-model], weight: -1, colour: red}\nrate_limits: {default: {requests_per_second: -3}}\n")
	resp, err = http.Post(b.admin+"/admin/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	errBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("invalid reload: %d %s", resp.StatusCode, errBody)
	}
	_, _, msg := gwError(t, errBody)
	for _, want := range []string{"replicas[1].colour", "replicas[0].url", "replicas[0].models", `replicas[1].name "s1" is not unique`, "replicas[1].weight", "rate_limits.default.requests_per_second"} {
		if !strings.Contains(msg, want) {
			t.Errorf("reload error does not name %s:\n%s", want, msg)
		}
	}
	_ = b.proc.cmd.Process.Signal(syscall.SIGHUP)
	scWait(t, "the refused SIGHUP reload counted", func() error {
		if n := btMetric(t, b.btBalancer, "inferrail_balancer_config_reloads_total", `result="error"`); n < 2 {
			return fmt.Errorf("%v failed reloads", n)
		}
		return nil
	})
	if got := reloads(); got != before {
		t.Errorf("an invalid file was applied: ok reloads %v → %v", before, got)
	}
	phase()
	waitServed("s1")
	waitServed("s2")
	close(done)
	wg.Wait()
	last := phase()
	if last["s0"] > 0 {
		t.Errorf("s0 served %d requests after it was removed", last["s0"])
	}
	select {
	case <-b.proc.done:
		t.Fatal("the balancer exited on SIGHUP")
	default:
	}
	t.Logf("%d requests, %d failed, across two reloads and two refused ones", ok.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d requests failed during reloads", failed.Load())
	}
}
