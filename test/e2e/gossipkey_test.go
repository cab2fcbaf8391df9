package e2e

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWrongGossipKeyCannotJoin: a balancer and a sidecar share a gossip key;
// a sidecar with another key and one with none try to join them. Neither
// becomes a member of anyone's view (`members` on each side), neither is
// listed or routed to as a replica, and their engines get no request: a node
// without the key can neither join nor announce load or summaries.
func TestWrongGossipKeyCannotJoin(t *testing.T) {
	bin := scBuild(t)
	dir := t.TempDir()
	keyFile := func(name string, b byte) string {
		p := filepath.Join(dir, name)
		k := base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), 32)))
		if err := os.WriteFile(p, []byte(k+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, wrong := keyFile("good.key", 'g'), keyFile("wrong.key", 'w')

	l, a, g := scFreePort(t), scFreePort(t), scFreePort(t)
	bal := &btBalancer{url: fmt.Sprintf("http://127.0.0.1:%d", l), admin: fmt.Sprintf("http://127.0.0.1:%d", a), gossip: fmt.Sprintf("127.0.0.1:%d", g)}
	cfg := strings.Replace(btConfig(fmt.Sprintf("127.0.0.1:%d", l), fmt.Sprintf("127.0.0.1:%d", a), bal.gossip, nil, "500ms"),
		"  profile: local\n", "  profile: local\n  key_file: "+good+"\n", 1)
	path := filepath.Join(dir, "bal.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bal.proc = scStart(t, bin, "bal-key", "balancer", "--config", path, "--node-name", "bal-key")

	sidecar := func(name string, key ...string) (*scSim, *scSidecar) {
		sim := btStartSim(t, bin, "sim-"+name, 4000, "--zero-latency")
		args := []string{"--node-name", name, "--join", bal.gossip, "--model", "e2e-model"}
		if len(key) > 0 {
			args = append(args, "--gossip-key-file", key[0])
		}
		return sim, scStartSidecar(t, bin, sim.url, sim.pub, sim.replay, args...)
	}
	_, member := sidecar("replica-good", good)
	wrongSim, wrongSc := sidecar("intruder-wrong-key", wrong)
	plainSim, plainSc := sidecar("intruder-no-key")
	scWait(t, "the balancer to see the member", func() error { return bal.replicasHealthy(1) })
	for _, sc := range []*scSidecar{wrongSc, plainSc} {
		scWait(t, sc.proc.name+" to fail a join", func() error {
			b, _ := os.ReadFile(sc.proc.log)
			if !strings.Contains(string(b), "join failed") {
				return errors.New("no failed join logged yet")
			}
			return nil
		})
	}

	for _, c := range []struct {
		admin string
		want  []string
	}{
		{strings.TrimPrefix(bal.admin, "http://"), []string{"bal-key", "replica-good"}},
		{strings.TrimPrefix(member.admin, "http://"), []string{"bal-key", "replica-good"}},
		{strings.TrimPrefix(wrongSc.admin, "http://"), []string{"intruder-wrong-key"}},
		{strings.TrimPrefix(plainSc.admin, "http://"), []string{"intruder-no-key"}},
	} {
		got, err := nmMembers(bin, c.admin)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("members of %s: %v (%v), want %v", c.admin, got, err, c.want)
		}
	}
	for i := range 30 {
		r := btComplete(bal.url, btPrefix(i)+" key test", 4)
		if r.err != nil || r.replica != "replica-good" {
			t.Fatalf("request %d: replica %q, %v", i, r.replica, r.err)
		}
	}
	page, err := kyPage(bal.admin)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, "intruder") {
		t.Errorf("the balancer's metrics name an intruder")
	}
	for _, s := range []*scSim{wrongSim, plainSim} {
		if n := scMetric(t, &scSidecar{admin: s.url}, "vllm:request_success_total", ""); n != 0 {
			t.Errorf("an intruder's engine served %v requests", n)
		}
	}
}

// kyPage returns an admin metrics page as text.
func kyPage(admin string) (string, error) {
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
