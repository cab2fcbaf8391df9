package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nmSidecarArgs are a sidecar's arguments for sim without --node-name, so
// that it takes its default name.
func nmSidecarArgs(t *testing.T, sim *scSim, join string) (args []string, admin string) {
	t.Helper()
	data, adm, gossip := scFreePort(t), scFreePort(t), scFreePort(t)
	return []string{"sidecar",
		"--engine-url", sim.url, "--engine", "vllm", "--tokenizer", "builtin:sim", "--model", "e2e-model",
		"--listen", fmt.Sprintf("127.0.0.1:%d", data), "--admin", fmt.Sprintf("127.0.0.1:%d", adm),
		"--gossip-bind", fmt.Sprintf("127.0.0.1:%d", gossip), "--gossip-profile", "local", "--join", join,
		"--kv-events-endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", sim.pub),
		"--kv-events-replay-endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", sim.replay)}, fmt.Sprintf("127.0.0.1:%d", adm)
}

// nmMembers runs `inferrail members --json` against admin and returns the
// alive members' names.
func nmMembers(bin, admin string) ([]string, error) {
	out, err := exec.Command(bin, "members", "--addr", admin, "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("members: %w", err)
	}
	var v struct {
		Members struct {
			Members []struct {
				Name   string `json:"name"`
				Status string `json:"status"`
			} `json:"members"`
		} `json:"members"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("members output %s: %w", out, err)
	}
	var alive []string
	for _, m := range v.Members.Members {
		if m.Status == "alive" {
			alive = append(alive, m.Name)
		}
	}
	return alive, nil
}

// TestDefaultNodeNamesFormOneCluster: two balancers and two sidecars on one
// host, none given a node name, form one cluster of four (`members` on every
// node lists all), and a sidecar given a name the cluster already has exits
// with a clear error instead of staying alone.
func TestDefaultNodeNamesFormOneCluster(t *testing.T) {
	bin := scBuild(t)
	var bals []string // admin addresses
	var seed string
	for i := range 2 {
		l, a, g := scFreePort(t), scFreePort(t), scFreePort(t)
		var join []string
		if i > 0 {
			join = []string{seed}
		} else {
			seed = fmt.Sprintf("127.0.0.1:%d", g)
		}
		path := filepath.Join(t.TempDir(), fmt.Sprintf("bal-%d.yaml", i))
		cfg := btConfig(fmt.Sprintf("127.0.0.1:%d", l), fmt.Sprintf("127.0.0.1:%d", a), fmt.Sprintf("127.0.0.1:%d", g), join, "500ms")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		scStart(t, bin, fmt.Sprintf("bal-%d", i), "balancer", "--config", path)
		bals = append(bals, fmt.Sprintf("127.0.0.1:%d", a))
	}
	admins := append([]string(nil), bals...)
	for i := range 2 {
		sim := btStartSim(t, bin, fmt.Sprintf("sim-%d", i), 4000)
		args, admin := nmSidecarArgs(t, sim, seed)
		scStart(t, bin, fmt.Sprintf("sidecar-%d", i), args...)
		admins = append(admins, admin)
	}
	var names []string
	for _, a := range admins {
		scWait(t, "every node to list four members", func() error {
			got, err := nmMembers(bin, a)
			if err != nil {
				return err
			}
			if len(got) != 4 {
				return fmt.Errorf("%s lists %v", a, got)
			}
			names = got
			return nil
		})
	}
	t.Logf("default names: %v", names)

	// A sidecar that takes an existing sidecar's name refuses to run.
	taken := ""
	for _, n := range names {
		if !strings.Contains(n, "-balancer-") {
			taken = n
		}
	}
	sim := btStartSim(t, bin, "sim-dup", 4000)
	args, _ := nmSidecarArgs(t, sim, seed)
	dup := scStart(t, bin, "sidecar-dup", append(args, "--node-name", taken)...)
	select {
	case <-dup.done:
	case <-time.After(scGuard): // a hang guard
		t.Fatalf("a sidecar named %q like a member kept running", taken)
	}
	var ee *exec.ExitError
	log, _ := os.ReadFile(dup.log)
	if !errors.As(dup.err, &ee) || !strings.Contains(string(log), "node name conflict") || !strings.Contains(string(log), taken) {
		t.Fatalf("the duplicate sidecar ended with %v; its log:\n%s", dup.err, log)
	}
	for _, a := range admins {
		if got, err := nmMembers(bin, a); err != nil || len(got) != 4 {
			t.Fatalf("after the duplicate, %s lists %v (%v)", a, got, err)
		}
	}
}
