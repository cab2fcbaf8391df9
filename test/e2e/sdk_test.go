package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sdkScript is the Node script that drives the official OpenAI SDK, relative
// to the repository root; sdkDir holds its installed packages
// (scripts/sdk-deps.sh).
const (
	sdkScript = "test/sdk/openai-sdk.mjs"
	sdkDir    = ".cache/sdk"
	// sdkNodeMajor is the oldest Node the pinned SDK supports (its README).
	sdkNodeMajor = 20
	// sdkGuard bounds the script's run: a hang guard, never a timing
	// assertion.
	sdkGuard = 3 * time.Minute
)

// TestOpenAISDK runs the official OpenAI SDK for Node (npm `openai`, pinned in
// test/sdk/package-lock.json) against a real balancer in front of two
// simulators with sidecars, changing only the SDK's base URL: chat and
// completions, streaming with usage, the inferrail headers, models.list and a
// 404 for an unknown model. Everything it starts is stopped by t.Cleanup, and
// a last cleanup checks that no process is left.
func TestOpenAISDK(t *testing.T) {
	root := scRepoRoot(t)
	node := sdkRequireNode(t)
	sdkRequirePackages(t, root)

	var pids []int
	t.Cleanup(func() { sdkNoProcessLeft(t, pids) }) // registered first: runs after every other cleanup

	bin := scBuild(t)
	// Default latency (not --zero-latency), so streams arrive token by token.
	f := btStartFleet(t, bin, 2, 4000, []string{"bal-sdk"})
	bal := f.bals[0]
	for _, s := range f.sims {
		pids = append(pids, s.proc.cmd.Process.Pid)
	}
	for _, s := range f.sidecars {
		pids = append(pids, s.proc.cmd.Process.Pid)
	}
	pids = append(pids, bal.proc.cmd.Process.Pid)

	ctx, cancel := context.WithTimeout(context.Background(), sdkGuard)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, node, sdkScript)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"INFERRAIL_BASE_URL="+bal.url+"/v1",
		"INFERRAIL_MODEL=e2e-model",
		"INFERRAIL_REPLICAS=replica-0,replica-1",
		"INFERRAIL_SDK_DIR="+filepath.Join(root, sdkDir),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", sdkScript, err)
	}
	pids = append(pids, cmd.Process.Pid)
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v (killed):\n%s", sdkScript, sdkGuard, out.String())
	}
	if err != nil {
		t.Fatalf("node %s: %v\n%s", sdkScript, err, out.String())
	}
	t.Logf("node %s:\n%s", sdkScript, out.String())
	if !strings.Contains(out.String(), "checks passed") {
		t.Fatalf("%s exited 0 without its summary line:\n%s", sdkScript, out.String())
	}

	// The SDK's requests were counted by the balancer.
	if n := btMetric(t, bal, "inferrail_balancer_requests_total", `outcome="ok"`); n == 0 {
		t.Errorf("the balancer counted no successful request")
	}
}

// sdkRequireNode returns the path of a node new enough for the SDK, failing
// the test (never skipping it) when there is none.
func sdkRequireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: install Node %d+ (apt-get install nodejs npm) and run `make fixtures`: %v", sdkNodeMajor, err)
	}
	v, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	major, err := sdkNodeVersion(string(v))
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	if major < sdkNodeMajor {
		t.Fatalf("node %s is too old for the openai SDK: install Node %d+", strings.TrimSpace(string(v)), sdkNodeMajor)
	}
	return node
}

// sdkNodeVersion returns the major version of `node --version` output
// ("v20.20.2").
func sdkNodeVersion(s string) (int, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, "v")
	if !ok {
		return 0, fmt.Errorf("unexpected version %q", s)
	}
	major, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0, fmt.Errorf("unexpected version %q: %w", s, err)
	}
	return n, nil
}

// sdkRequirePackages fails the test unless the SDK version test/sdk pins is
// installed in .cache/sdk.
func sdkRequirePackages(t *testing.T, root string) {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(root, "test", "sdk", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("test/sdk/package.json: %v", err)
	}
	want := pkg.Dependencies["openai"]
	if want == "" {
		t.Fatal("test/sdk/package.json pins no openai version")
	}
	var installed struct {
		Version string `json:"version"`
	}
	path := filepath.Join(root, sdkDir, "node_modules", "openai", "package.json")
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatalf("the openai SDK is not installed (%v): run `make fixtures` (scripts/sdk-deps.sh)", err)
	}
	if err := json.Unmarshal(b, &installed); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if installed.Version != want {
		t.Fatalf("openai %s is installed in %s, test/sdk pins %s: run `make fixtures` (scripts/sdk-deps.sh)", installed.Version, sdkDir, want)
	}
}

// sdkNoProcessLeft fails the test if any of pids still names a process.
func sdkNoProcessLeft(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range sdkLive(pids) {
		t.Errorf("process %d is still running after the cleanups", pid)
	}
}

// sdkLive returns the pids that name a process (kill -0 finds it).
func sdkLive(pids []int) []int {
	var live []int
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			live = append(live, pid)
		}
	}
	return live
}

// TestSDKLive: the leak check finds a running process and not one that was
// waited for.
func TestSDKLive(t *testing.T) {
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	got := sdkLive([]int{done.Process.Pid, self})
	if diff := cmp.Diff([]int{self}, got); diff != "" {
		t.Errorf("sdkLive mismatch (-want +got):\n%s", diff)
	}
}

func TestSDKNodeVersion(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
		wantErr  bool
	}{
		{name: "release", in: "v20.20.2\n", want: 20},
		{name: "major only", in: "v22", want: 22},
		{name: "no v", in: "20.1.0", wantErr: true},
		{name: "not a number", in: "vX.1", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sdkNodeVersion(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("sdkNodeVersion(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
