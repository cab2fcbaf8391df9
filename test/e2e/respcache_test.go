package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/redistest"
)

// rcDo posts body to path with the API key (none: "") and the headers,
// and returns the response and its whole body.
func rcDo(t *testing.T, base, path, key, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{Timeout: scGuard} // a hang guard, not a timing assertion
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("POST %s: read: %v", path, err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return resp, b
}

// rcWant checks the x-inferrail-cache header.
func rcWant(t *testing.T, what string, resp *http.Response, want string) {
	t.Helper()
	if got := resp.Header.Get("X-Inferrail-Cache"); got != want {
		t.Errorf("%s: x-inferrail-cache %q, want %q", what, got, want)
	}
}

func rcCompletion(prompt string, stream bool) string {
	return fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":8,"temperature":0,"stream":%v}`, prompt, stream)
}

func rcChat(question string) string {
	return fmt.Sprintf(`{"model":"e2e-model","messages":[{"role":"user","content":%q}],"max_tokens":8,"temperature":0}`, question)
}

// rcConfig is a balancer config with both caches over one simulator, which
// also embeds; extra is appended under response_cache.
func rcConfig(simURL, embedURL, extra string) string {
	return fmt.Sprintf(`gossip: {enabled: false}
health: {probe_interval: 0s}
models: [{name: e2e-model, tokenizer: builtin:sim}]
replicas: [{name: s0, url: %s, models: [e2e-model]}]
auth:
  admin_token: adm
  keys:
    - {name: alice, key: sk-alice}
    - {name: bob, key: sk-bob}
    - {name: carol, key: sk-carol, cache_group: team}
    - {name: dave, key: sk-dave, cache_group: team}
response_cache:
  exact: {enabled: true}
  semantic:
    enabled: true
    max_distance: 0.35
    embeddings: {url: %s, model: e2e-model, timeout: 5s} # a hang guard on a loaded machine
%s`, simURL, embedURL, extra)
}

func TestResponseCacheE2E(t *testing.T) {
	bin := scBuild(t)
	t.Run("replay, tenants, purge", func(t *testing.T) { rcReplay(t, bin) })
	t.Run("shared through one redis", func(t *testing.T) { rcShared(t, bin) })
	t.Run("embeddings down or hung", func(t *testing.T) { rcEmbeddingsDown(t, bin) })
	t.Run("bad config rejected", func(t *testing.T) { rcRejected(t, bin) })
}

// rcReplay: a cached stream is replayed byte for byte, a paraphrase hits
// the semantic cache, tenants never read each other's answers (a cache
// group shares), a cancelled stream is not stored, a purge empties.
func rcReplay(t *testing.T, bin string) {
	sim := gwStartSim(t, bin, "sim-rc") // real latency: a stream lasts long enough to cancel
	b := gwStartBalancer(t, bin, "bal-rc", rcConfig(sim.url, sim.url, ""))

	stream := rcCompletion("tell me about the tides", true)
	resp, first := rcDo(t, b.url, "/v1/completions", "sk-alice", stream)
	rcWant(t, "first stream", resp, "miss")
	if !bytes.HasSuffix(first, []byte("data: [DONE]\n\n")) {
		t.Fatalf("first stream does not end with [DONE]: %q", first)
	}
	resp, again := rcDo(t, b.url, "/v1/completions", "sk-alice", stream)
	rcWant(t, "repeated stream", resp, "hit")
	if !bytes.Equal(first, again) {
		t.Errorf("the replayed stream differs from the first:\n%q\n%q", first, again)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("replayed Content-Type %q", ct)
	}
	// Each fresh answer carries its own request id: a hit carries the first.
	resp, bobs := rcDo(t, b.url, "/v1/completions", "sk-bob", stream)
	rcWant(t, "another tenant", resp, "miss")
	if bytes.Equal(bobs, first) {
		t.Error("another tenant got the first tenant's bytes")
	}
	// Key order and whitespace do not matter.
	reordered := `{ "stream": true, "temperature": 0.0, "max_tokens": 8, "prompt": "tell me about the tides", "model": "e2e-model" }`
	resp, _ = rcDo(t, b.url, "/v1/completions", "sk-alice", reordered)
	rcWant(t, "reordered body", resp, "hit")

	// A cache group shares; its members' answers stay apart from others'.
	resp, carols := rcDo(t, b.url, "/v1/chat/completions", "sk-carol", rcChat("what is the capital of France?"))
	rcWant(t, "carol", resp, "miss")
	resp, daves := rcDo(t, b.url, "/v1/chat/completions", "sk-dave", rcChat("what is the capital of France?"))
	rcWant(t, "dave, same group", resp, "hit")
	if !bytes.Equal(carols, daves) {
		t.Error("a group member's hit differs from the stored answer")
	}
	resp, _ = rcDo(t, b.url, "/v1/chat/completions", "sk-alice", rcChat("what is the capital of France?"))
	rcWant(t, "alice, outside the group", resp, "miss")

	// A paraphrase hits the semantic cache within the tenant only.
	resp, para := rcDo(t, b.url, "/v1/chat/completions", "sk-dave", rcChat("what is the capital city of France?"))
	rcWant(t, "paraphrase", resp, "hit")
	if !bytes.Equal(para, carols) {
		t.Error("the semantic hit is not the stored answer")
	}
	resp, _ = rcDo(t, b.url, "/v1/chat/completions", "sk-bob", rcChat("what is the capital city of France?"))
	rcWant(t, "paraphrase by another tenant", resp, "miss")
	resp, _ = rcDo(t, b.url, "/v1/chat/completions", "sk-dave", rcChat("how do I bake sourdough bread at home?"))
	rcWant(t, "another question", resp, "miss")

	// Sampled requests and no-store are not cached.
	resp, _ = rcDo(t, b.url, "/v1/completions", "sk-alice", `{"model":"e2e-model","prompt":"tell me about the tides","max_tokens":8}`)
	rcWant(t, "sampled", resp, "bypass")
	resp, _ = rcDo(t, b.url, "/v1/completions", "sk-alice", stream, "Cache-Control", "no-store")
	rcWant(t, "no-store", resp, "bypass")

	// A stream the client cancels is never stored.
	long := `{"model":"e2e-model","prompt":"a long story about the sea","max_tokens":300,"ignore_eos":true,"temperature":0,"stream":true}`
	req, _ := http.NewRequest("POST", b.url+"/v1/completions", strings.NewReader(long))
	req.Header.Set("Authorization", "Bearer sk-alice")
	cresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(cresp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line of the long stream: %q %v", line, err)
	}
	cresp.Body.Close()
	scWait(t, "the cancelled stream to end", func() error {
		if n := btMetric(t, b.btBalancer, "inferrail_balancer_requests_total", `outcome="client_gone"`); n < 1 {
			return fmt.Errorf("client_gone = %v", n)
		}
		return nil
	})
	if n := btMetric(t, b.btBalancer, "inferrail_cache_stores_total", `cache="exact"`); n != 6 {
		t.Errorf("stores = %v, want 6 (every miss but the sampled, no-store and cancelled ones)", n)
	}

	if got := btMetric(t, b.btBalancer, "inferrail_cache_hits_total", `cache="exact"`); got != 3 {
		t.Errorf("exact hits = %v, want 3", got)
	}
	if got := btMetric(t, b.btBalancer, "inferrail_cache_hits_total", `cache="semantic"`); got != 1 {
		t.Errorf("semantic hits = %v, want 1", got)
	}
	if got := btMetric(t, b.btBalancer, "inferrail_cache_entries", `cache="exact"`); got != 6 {
		t.Errorf("entries = %v, want 6", got)
	}

	// Purge alice's answers on the admin port (the admin token is needed).
	purge := func(query, token string) (int, string) {
		req, _ := http.NewRequest("POST", b.admin+"/admin/cache/purge?"+query, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := purge("key=alice", ""); code != 403 {
		t.Errorf("purge without the admin token: %d", code)
	}
	if code, body := purge("key=alice", "adm"); code != 200 || !strings.Contains(body, `"entries":2`) {
		t.Errorf("purge key=alice: %d %s", code, body)
	}
	resp, _ = rcDo(t, b.url, "/v1/completions", "sk-alice", stream)
	rcWant(t, "after the purge", resp, "miss")
	resp, _ = rcDo(t, b.url, "/v1/completions", "sk-bob", stream)
	rcWant(t, "bob after alice's purge", resp, "hit")
	if code, body := purge("model=e2e-model", "adm"); code != 200 || !strings.Contains(body, `"entries":5`) {
		t.Errorf("purge model=e2e-model: %d %s", code, body)
	}
	resp, _ = rcDo(t, b.url, "/v1/chat/completions", "sk-dave", rcChat("what is the capital city of France?"))
	rcWant(t, "paraphrase after the model's purge", resp, "miss")
}

// rcShared: two balancers on one Redis; a question answered through one
// hits through the other, exactly and paraphrased.
func rcShared(t *testing.T, bin string) {
	redis := redistest.Start(t)
	sim := gwStartSim(t, bin, "sim-rc-shared", "--zero-latency")
	cfg := rcConfig(sim.url, sim.url, fmt.Sprintf("  redis: {addr: %s, timeout: 5s}\n", redis.Addr))
	a := gwStartBalancer(t, bin, "bal-rc-a", cfg)
	b := gwStartBalancer(t, bin, "bal-rc-b", cfg)

	stream := rcCompletion("why is the sky blue", true)
	resp, first := rcDo(t, a.url, "/v1/completions", "sk-alice", stream)
	rcWant(t, "through a", resp, "miss")
	resp, fromB := rcDo(t, b.url, "/v1/completions", "sk-alice", stream)
	rcWant(t, "through b", resp, "hit")
	if !bytes.Equal(first, fromB) {
		t.Errorf("b replayed other bytes:\n%q\n%q", first, fromB)
	}
	resp, _ = rcDo(t, b.url, "/v1/completions", "sk-bob", stream)
	rcWant(t, "another tenant through b", resp, "miss")

	_, answer := rcDo(t, a.url, "/v1/chat/completions", "sk-alice", rcChat("what is the tallest mountain on earth?"))
	// b's index follows Redis's stream of inserts: poll for the vector. It
	// holds three then: alice's and bob's prompts about the sky (completion
	// prompts are questions too) and a's new one; waiting for two would
	// pass before a's vector arrived.
	scWait(t, "b's semantic index to hold a's vector", func() error {
		if n := btMetric(t, b.btBalancer, "inferrail_cache_entries", `cache="semantic"`); n < 3 {
			return fmt.Errorf("b indexes %v vectors", n)
		}
		return nil
	})
	resp, para := rcDo(t, b.url, "/v1/chat/completions", "sk-alice", rcChat("what is the tallest mountain on the earth?"))
	rcWant(t, "paraphrase through b", resp, "hit")
	if !bytes.Equal(para, answer) {
		t.Error("b's semantic hit is not a's answer")
	}
	// A purge through b reaches a's index too.
	req, _ := http.NewRequest("POST", b.admin+"/admin/cache/purge?key=alice", nil)
	req.Header.Set("Authorization", "Bearer adm")
	if presp, err := http.DefaultClient.Do(req); err != nil || presp.StatusCode != 200 {
		t.Fatalf("purge through b: %v %v", presp, err)
	}
	scWait(t, "a's index to drop alice's vectors", func() error {
		if n := btMetric(t, a.btBalancer, "inferrail_cache_entries", `cache="semantic"`); n != 1 { // bob's stays
			return fmt.Errorf("a indexes %v vectors", n)
		}
		return nil
	})
	resp, _ = rcDo(t, a.url, "/v1/chat/completions", "sk-alice", rcChat("what is the tallest mountain on the earth?"))
	rcWant(t, "paraphrase through a after the purge", resp, "miss")
}

// rcEmbeddingsDown: with the embeddings endpoint refusing connections, or
// accepting and never answering, requests are answered (the lookup gives
// up at the bound) and the failures are counted.
func rcEmbeddingsDown(t *testing.T, bin string) {
	sim := gwStartSim(t, bin, "sim-rc-down", "--zero-latency")
	down := fmt.Sprintf("http://127.0.0.1:%d", scFreePort(t)) // nothing listens there
	hung := gwStartSim(t, bin, "sim-rc-hung", "--zero-latency", "--faults", `[{"kind":"hang","path":"/v1/embeddings","duration":"1h"}]`)
	for _, c := range []struct{ name, url, result string }{{"down", down, "error"}, {"hung", hung.url, "timeout"}} {
		// The bound under test: short, so that the test is quick.
		cfg := strings.Replace(rcConfig(sim.url, c.url, ""), "timeout: 5s", "timeout: 300ms", 1)
		b := gwStartBalancer(t, bin, "bal-rc-"+c.name, cfg)
		for i := range 3 {
			// rcDo's client gives up at scGuard: a lookup waiting on the
			// hung endpoint would fail here.
			resp, _ := rcDo(t, b.url, "/v1/chat/completions", "sk-alice", rcChat(fmt.Sprintf("question number %d", i)))
			rcWant(t, c.name, resp, "miss")
		}
		if n := btMetric(t, b.btBalancer, "inferrail_cache_errors_total", `cache="semantic",op="embed"`); n != 3 {
			t.Errorf("%s: embed errors = %v, want 3", c.name, n)
		}
		if n := btMetric(t, b.btBalancer, "inferrail_cache_embedding_duration_seconds_count", fmt.Sprintf(`result=%q`, c.result)); n < 1 {
			t.Errorf("%s: no embedding call counted as %s", c.name, c.result)
		}
		// The exact cache still works.
		resp, _ := rcDo(t, b.url, "/v1/chat/completions", "sk-alice", rcChat("question number 0"))
		rcWant(t, c.name+": exact repeat", resp, "hit")
	}
}

// rcRejected: a max_distance outside [0, 2] fails `inferrail check` with
// its path and value; an embedding size that is not the configured one
// stops the balancer at start with both sizes named.
func rcRejected(t *testing.T, bin string) {
	sim := gwStartSim(t, bin, "sim-rc-bad", "--zero-latency")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad-distance.yaml", strings.Replace(rcConfig(sim.url, sim.url, ""), "max_distance: 0.35", "max_distance: 3", 1))
	out, err := exec.Command(bin, "check", "--config", bad).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 ||
		!strings.Contains(string(out), "response_cache.semantic.max_distance must be a cosine distance in [0, 2]") ||
		!strings.Contains(string(out), "got 3") {
		t.Errorf("check with max_distance 3: %v\n%s", err, out)
	}
	cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nadmin: 127.0.0.1:%d\n", scFreePort(t), scFreePort(t)) +
		strings.Replace(rcConfig(sim.url, sim.url, ""), "max_distance: 0.35", "max_distance: 0.35\n    dimensions: 64", 1)
	p := scStart(t, bin, "bal-rc-dims", "balancer", "--config", write("dims.yaml", cfg))
	select {
	case <-p.done:
	case <-time.After(scGuard):
		t.Fatal("the balancer with a wrong dimensions value did not exit")
	}
	log, _ := os.ReadFile(p.log)
	if p.err == nil || !strings.Contains(string(log), "the embedding has 256 dimensions but the semantic index holds 64") {
		t.Errorf("exit %v, log:\n%s", p.err, log)
	}
}
