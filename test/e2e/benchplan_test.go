package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// bpPlans runs the committed matrix script with DRY_RUN=1 against the real
// binary and returns each part's plan output.
func bpPlans(t *testing.T, bin string, env ...string) (map[string]string, []string, error) {
	t.Helper()
	cmd := exec.Command("sh", filepath.Join(scRepoRoot(t), "bench", "scripts", "bench-default.sh"))
	cmd.Env = append(os.Environ(), append([]string{"DRY_RUN=1", "BIN=" + bin, "RESULTS=" + t.TempDir(), "REPORT=" + t.TempDir()}, env...)...)
	out, err := cmd.CombinedOutput()
	parts := map[string]string{}
	var order []string
	for _, sec := range strings.Split(string(out), "== ")[1:] {
		name, body, _ := strings.Cut(sec, "\n")
		parts[name], order = body, append(order, name)
	}
	if err != nil {
		return parts, order, &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: out}
	}
	return parts, order, nil
}

var bpBudget = regexp.MustCompile(`budget: .* = (\S+) \(\d+ minutes\) at most`)

// The matrix script's plan: every part within 30 minutes by its own budget,
// every policy at 1× after a capacity search of round robin, round_robin,
// the best peer and cost_model at 0.5× and 1.5× and with 4 balancers, two
// repetitions, and the policy list taken as data.
func TestBenchMatrixPlan(t *testing.T) {
	bin := scBuild(t)
	parts, order, err := bpPlans(t, bin)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, err.(*exec.ExitError).Stderr)
	}
	want := []string{"W1", "W2", "W3", "W6", "ladder", "mooncake", "mooncake-h100"}
	if !slices.Equal(order, want) {
		t.Fatalf("parts %v, want %v", order, want)
	}
	row := regexp.MustCompile(`(?m)^(\S+)\s+(capacity|policy|baseline|oracle|load|balancers)\s`)
	for _, part := range want {
		plan := parts[part]
		m := bpBudget.FindStringSubmatch(plan)
		if m == nil {
			t.Errorf("%s: no budget line:\n%s", part, plan)
			continue
		}
		d, err := time.ParseDuration(m[1])
		if err != nil || d > 30*time.Minute {
			t.Errorf("%s: budget %s (%v), want at most 30 minutes", part, m[1], err)
		}
		if !strings.Contains(plan, "(2 repetitions)") {
			t.Errorf("%s: not two repetitions:\n%s", part, plan)
		}
		runs := map[string]string{}
		capacity := 0
		for _, r := range row.FindAllStringSubmatch(plan, -1) {
			runs[r[1]] = r[2]
			if r[2] == "capacity" {
				capacity++
				if !strings.HasPrefix(r[1], "round_robin-capacity@") {
					t.Errorf("%s: capacity search of %s, want round_robin", part, r[1])
				}
			}
		}
		if capacity < 3 {
			t.Errorf("%s: %d capacity rates, want a ladder of at least 3", part, capacity)
		}
		for _, p := range []string{"round_robin", "least_request", "p2c", "cost_model", "sglang_cache_aware", "dynamo_kv", "llm_d"} {
			if runs[p] != "policy" {
				t.Errorf("%s: %s has no run at 1× (%q)", part, p, runs[p])
			}
		}
		for _, p := range []string{"round_robin", "best_peer", "cost_model"} {
			sweeps := []string{p + "@1.5x", p + "-4b"}
			if part != "ladder" {
				sweeps = append(sweeps, p+"@0.5x")
			}
			for _, s := range sweeps {
				if runs[s] == "" {
					t.Errorf("%s: no %s run", part, s)
				}
			}
		}
	}
	for _, s := range []string{"cost_model-oracle", "nginx-round_robin", "nginx-least_conn", "kv_aware", "prefix_hash"} {
		if !strings.Contains(parts["W1"], s+" ") {
			t.Errorf("W1 lacks %s:\n%s", s, parts["W1"])
		}
	}
	// The policy list is data the script passes through; a name the binary
	// does not know is refused before any fleet starts, naming it.
	parts, _, err = bpPlans(t, bin, "WORKLOADS=W6", "POLICIES=round_robin,cost_model,dynamo_kv", "PEERS=dynamo_kv")
	if err != nil || !strings.Contains(parts["W6"], "dynamo_kv ") || !strings.Contains(parts["W6"], "best_peer@1.5x") {
		t.Errorf("POLICIES as data: err %v, plan:\n%s", err, parts["W6"])
	}
	if _, _, err := bpPlans(t, bin, "WORKLOADS=W6", "POLICIES=round_robin,future_policy"); err == nil ||
		!strings.Contains(string(err.(*exec.ExitError).Stderr), `"future_policy" is not a policy`) {
		t.Errorf("an unknown policy gave %v", err)
	}
	if _, _, err := bpPlans(t, bin, "WORKLOADS=W9"); err == nil || !strings.Contains(string(err.(*exec.ExitError).Stderr), "unknown part W9") {
		t.Errorf("an unknown part gave %v", err)
	}
}
