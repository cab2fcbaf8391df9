package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestCalibrateE2E runs `inferrail calibrate` against `inferrail sim` with
// non-default latency constants, then feeds the printed block to
// `inferrail check` inside a balancer config; bad invocations fail with a
// clear error and a non-zero exit.
func TestCalibrateE2E(t *testing.T) {
	bin := scBuild(t)
	port := scFreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	scStart(t, bin, "sim", "sim", "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--served-model-name", "e2e-model", "--enable-prompt-tokens-details",
		"--max-num-batched-tokens", "2048", "--max-model-len", "8192",
		"--step-overhead", "2ms", "--linear-tokens-per-second", "20000", "--attention-ns-per-pair", "3",
		"--kv-read-us-per-token", "0.1", "--request-overhead", "15ms")
	scWait(t, "sim health", func() error { return calHTTPOK(url + "/health") })

	dir := t.TempDir()
	outFile := filepath.Join(dir, "cost.yaml")
	cmd := exec.Command(bin, "calibrate", "--engine", url, "--step-token-budget", "2048", "--repetitions", "2",
		"--max-duration", "90s", "--out", outFile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("calibrate: %v\n%s", err, stderr.String())
	}
	t.Logf("calibrate stderr:\n%s", stderr.String())
	block := stdout.String()
	if file, err := os.ReadFile(outFile); err != nil || string(file) != block {
		t.Errorf("--out file differs from stdout (err %v)", err)
	}
	// The fitted linear throughput is the simulator's (the unit tests in
	// balancer/calibrate check every constant; this one is the sanity check
	// that the binary's flags reach the fit).
	var doc struct {
		CostModel struct {
			LinearTokPerSec float64 `yaml:"linear_tok_per_sec"`
			StepTokenBudget int     `yaml:"step_token_budget"`
		} `yaml:"cost_model"`
	}
	if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
		t.Fatalf("calibrate printed no YAML: %v\n%s", err, block)
	}
	if r := doc.CostModel.LinearTokPerSec; r < 18000 || r > 22000 || doc.CostModel.StepTokenBudget != 2048 {
		t.Errorf("linear_tok_per_sec %v (simulator 20000), step_token_budget %d (2048)", r, doc.CostModel.StepTokenBudget)
	}

	var cfg strings.Builder
	fmt.Fprintf(&cfg, "listen: 127.0.0.1:%d\nadmin: 127.0.0.1:%d\ngossip:\n  enabled: false\n", scFreePort(t), scFreePort(t))
	fmt.Fprintf(&cfg, "replicas:\n  - name: sim\n    url: %s\n    models: [e2e-model]\n", url)
	cfg.WriteString("models:\n  - name: e2e-model\n    tokenizer: builtin:sim\n    routing:\n")
	for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		cfg.WriteString("      " + line + "\n")
	}
	cfgFile := filepath.Join(dir, "balancer.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "--config", cfgFile).CombinedOutput(); err != nil || !strings.Contains(string(out), ": ok") {
		t.Errorf("check of the calibrated config: %v\n%s\n%s", err, out, cfg.String())
	}

	closed := scFreePort(t)
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no engine", []string{"calibrate"}, 2, "--engine is required"},
		{"bad flag", []string{"calibrate", "--engine", url, "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"bad URL", []string{"calibrate", "--engine", "ftp://x"}, 1, `engine URL must be http(s)://host[:port][/prefix], got "ftp://x"`},
		{"unreachable", []string{"calibrate", "--engine", fmt.Sprintf("http://127.0.0.1:%d", closed)}, 1, "connection refused"},
		{"unknown model", []string{"calibrate", "--engine", url, "--model", "nope"}, 1, `model "nope" is not served`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(bin, tt.args...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tt.code || !strings.Contains(string(out), tt.want) {
				t.Errorf("inferrail %v: %v, want exit %d and %q in:\n%s", tt.args, err, tt.code, tt.want, out)
			}
		})
	}
}

// calHTTPOK reports nil when GET url answers 200.
func calHTTPOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return errors.New(resp.Status)
	}
	return nil
}
