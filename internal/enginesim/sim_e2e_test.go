package enginesim

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestBinaryEndToEnd builds the real inferrail binary, runs `inferrail sim`
// on a free port, talks to it over HTTP and stops it with SIGTERM.
func TestBinaryEndToEnd(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "inferrail")
	build := exec.Command("go", "build", "-o", bin, "github.com/inferrail/inferrail/cmd/inferrail")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "sim", "--host", "127.0.0.1", "--port", "0", "--zero-latency",
		"--served-model-name", "e2e-model,e2e-alias", "--enable-prompt-tokens-details", "--data-parallel-size", "2",
		"--max-model-len", "4096", "--num-gpu-blocks-override", "2048", "--log-level", "info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	// The listening line names the bound address.
	sc := bufio.NewScanner(stderr)
	addrRE := regexp.MustCompile(`msg="simulator listening" addr=(\S+)`)
	var addr string
	for sc.Scan() {
		if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		t.Fatalf("no listening line on stderr (scan error %v)", sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	base := "http://" + addr
	c := &http.Client{}

	resp, err := c.Get(base + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()

	long := strings.Repeat("a long shared system prompt ", 30)
	chat := `{"model":"e2e-alias","messages":[{"role":"system","content":"` + long + `"},{"role":"user","content":"hi"}],"max_tokens":4}`
	_, first := post(t, c, base+"/v1/chat/completions", chat)
	_, second := post(t, c, base+"/v1/chat/completions", chat)
	var r1, r2 struct {
		Model string `json:"model"`
		Usage struct {
			Details *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	mustJSON(t, first, &r1)
	mustJSON(t, second, &r2)
	if r1.Model != "e2e-model" {
		t.Errorf("model = %q, want the first served name", r1.Model)
	}
	if r1.Usage.Details != nil || r2.Usage.Details == nil || r2.Usage.Details.CachedTokens == 0 {
		t.Errorf("cached tokens: first %s, second %s", first, second)
	}

	sresp, body := post(t, c, base+"/v1/completions", `{"prompt":"stream me","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`)
	events := sseData(t, body)
	if sresp.StatusCode != 200 || len(events) < 3 || events[len(events)-1] != "[DONE]" {
		t.Errorf("stream: %d %q", sresp.StatusCode, events)
	}

	mresp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="e2e-model"} 3`,
		`vllm:num_requests_running{engine="1",model_name="e2e-model"} 0`,
		`vllm:prefix_cache_hits_total{engine="0",model_name="e2e-model"}`,
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("metrics page lacks %q", want)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	err = waitFor(t, waited, "the simulator to exit after SIGTERM")
	exited = true
	if err != nil {
		t.Errorf("after SIGTERM: %v, want exit status 0", err)
	}
}
