package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDecisionLogAndExplainCLI runs the real binary: a balancer over two
// simulators with decision_log.path set writes one JSON line per routed
// request, naming its request id and both candidates and never the prompt;
// `inferrail explain` prints the pick as a table and as JSON, sends nothing
// upstream, and exits 1 with the server's message for an unknown model.
func TestDecisionLogAndExplainCLI(t *testing.T) {
	bin := scBuild(t)
	sims := []*scSim{dlStartSim(t, bin, "sim-0"), dlStartSim(t, bin, "sim-1")}
	l, a := scFreePort(t), scFreePort(t)
	url, admin := fmt.Sprintf("http://127.0.0.1:%d", l), fmt.Sprintf("127.0.0.1:%d", a)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "decisions.jsonl")
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
admin: %s
models:
  - name: e2e-model
    tokenizer: builtin:sim
    block_size: 16
replicas:
  - {name: sim-0, url: %q, models: [e2e-model]}
  - {name: sim-1, url: %q, models: [e2e-model]}
gossip:
  enabled: false
decision_log:
  path: %q
  sample_ratio: 1
`, l, admin, sims[0].url, sims[1].url, logPath)
	cfgPath := filepath.Join(dir, "balancer.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bal := scStart(t, bin, "balancer", "balancer", "--config", cfgPath)
	scWaitOK(t, "the balancer to route", url+"/health")

	prompt := "zebracorn-secret " + btPrefix(1)[:800]
	var ids []string
	for i := range 5 {
		body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":2}`, fmt.Sprintf("%s %d", prompt, i))
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
		ids = append(ids, resp.Header.Get("X-Request-Id"))
	}

	before := simRequests(t, sims)
	bodyPath := filepath.Join(dir, "body.json")
	if err := os.WriteFile(bodyPath, []byte(fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":2}`, prompt+" 0")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "explain", "--addr", admin, "--body", bodyPath).CombinedOutput()
	if err != nil {
		t.Fatalf("inferrail explain: %v\n%s", err, out)
	}
	for _, want := range []string{"policy cost_model", "route completions", "pick sim-", "REPLICA", "sim-0", "sim-1", "CACHED TOK", "TTFT MS"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("explain table lacks %q:\n%s", want, out)
		}
	}
	cmd := exec.Command(bin, "explain", "--addr", admin, "--json")
	cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"model":"e2e-model","prompt":%q}`, prompt+" 0"))
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("inferrail explain --json: %v", err)
	}
	var ex struct {
		Pick         string            `json:"pick"`
		PromptTokens int               `json:"prompt_tokens"`
		Blocks       []string          `json:"blocks"`
		Cached       int               `json:"predicted_cached_tokens"`
		Candidates   []json.RawMessage `json:"candidates"`
	}
	if err := json.Unmarshal(out, &ex); err != nil {
		t.Fatalf("explain --json: %v\n%s", err, out)
	}
	if (ex.Pick != "sim-0" && ex.Pick != "sim-1") || ex.PromptTokens == 0 || len(ex.Blocks) == 0 || len(ex.Candidates) != 2 || ex.Cached == 0 {
		t.Errorf("explain --json = %s", out)
	}
	cmd = exec.Command(bin, "explain", "--addr", admin)
	cmd.Stdin = strings.NewReader(`{"model":"no-such-model","prompt":"x"}`)
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !bytes.Contains(out, []byte("does not exist")) {
		t.Errorf("explain of an unknown model: %v\n%s", err, out)
	}
	if after := simRequests(t, sims); after != before {
		t.Errorf("explain sent %v requests upstream", after-before)
	}

	var lines []string
	scWait(t, "the decision log to hold every decision", func() error {
		data, err := os.ReadFile(logPath)
		if err != nil {
			return err
		}
		lines = nil
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if len(lines) < len(ids) {
			return fmt.Errorf("%d lines", len(lines))
		}
		return nil
	})
	bal.kill(syscall.SIGTERM)
	if len(lines) != len(ids) {
		t.Fatalf("%d lines for %d requests", len(lines), len(ids))
	}
	for i, line := range lines {
		if strings.Contains(line, "zebracorn") {
			t.Errorf("line %d holds the prompt: %s", i, line)
		}
		var rec struct {
			RequestID  string `json:"request_id"`
			Attempt    int    `json:"attempt"`
			Prompt     int    `json:"prompt_tokens"`
			Winner     string `json:"winner"`
			Candidates []struct {
				ID string `json:"id"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		if rec.RequestID != ids[i] || rec.Attempt != 1 || rec.Prompt == 0 || rec.Winner == "" || len(rec.Candidates) != 2 {
			t.Errorf("line %d = %s (request id %s)", i, line, ids[i])
		}
	}
}

// simRequests returns the requests the simulators have counted, from their
// vllm:request_success_total metrics (summed over finish reasons).
func simRequests(t *testing.T, sims []*scSim) float64 {
	t.Helper()
	total := 0.0
	for _, s := range sims {
		total += scMetric(t, &scSidecar{admin: s.url}, "vllm:request_success_total", "")
	}
	return total
}

// dlStartSim starts a simulator without KV events (the balancer here has no
// sidecars): one port to pick, not three.
func dlStartSim(t *testing.T, bin, name string) *scSim {
	t.Helper()
	s := &scSim{bin: bin, port: scFreePort(t)}
	s.url = fmt.Sprintf("http://127.0.0.1:%d", s.port)
	s.proc = scStart(t, bin, name, "sim", "--host", "127.0.0.1", "--port", fmt.Sprint(s.port),
		"--served-model-name", "e2e-model", "--block-size", "16", "--enable-prompt-tokens-details")
	scWaitOK(t, name+" health", s.url+"/health")
	return s
}
