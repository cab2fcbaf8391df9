package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tpStart starts a balancer whose config is listen + admin + body and waits
// for its admin port only (its replicas may come later, from the gossip).
func tpStart(t *testing.T, bin, name, body string) *btBalancer {
	t.Helper()
	l, a := scFreePort(t), scFreePort(t)
	b := &btBalancer{url: fmt.Sprintf("http://127.0.0.1:%d", l), admin: fmt.Sprintf("http://127.0.0.1:%d", a)}
	path := filepath.Join(t.TempDir(), name+".yaml")
	cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nadmin: 127.0.0.1:%d\n%s", l, a, body)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	b.proc = scStart(t, bin, name, "balancer", "--config", path, "--log-level", "debug")
	scWait(t, name+" admin", func() error {
		resp, err := http.Get(b.admin + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return b
}

// tpResult is what one chat completion returned.
type tpResult struct {
	replica           string
	predicted, prompt int // the balancer's headers
	estimated         string
	cached            int // the engine's usage
}

func tpChat(t *testing.T, url, system, question string) tpResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "e2e-model", "max_tokens": 2, "ignore_eos": true,
		"messages": []map[string]string{{"role": "system", "content": system}, {"role": "user", "content": question}}})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %s: %s", resp.Status, b)
	}
	var out struct {
		Usage struct {
			PromptTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	r := tpResult{replica: resp.Header.Get("X-Inferrail-Replica"), estimated: resp.Header.Get("X-Inferrail-Tokens-Estimated")}
	if r.predicted, err = strconv.Atoi(resp.Header.Get("X-Inferrail-Cached-Tokens")); err != nil {
		t.Fatalf("x-inferrail-cached-tokens: %v (headers %v)", err, resp.Header)
	}
	r.prompt, _ = strconv.Atoi(resp.Header.Get("X-Inferrail-Prompt-Tokens"))
	if d := out.Usage.PromptTokensDetails; d != nil {
		r.cached = d.CachedTokens
	}
	return r
}

// tpSystem is a system prompt of about 3,600 builtin:sim tokens for group g.
func tpSystem(g int) string {
	return strings.Repeat(fmt.Sprintf("Group %d's long policy document, section %d. ", g, g*13+1), 400)
}

// tpAffinity sends, for each of three system prompts, one request and then
// four more with other questions: every repeat goes to the replica of the
// first, the engine finds the prefix cached, and the balancer says its
// counts are estimates.
func tpAffinity(t *testing.T, url string) {
	t.Helper()
	for g := range 3 {
		system := tpSystem(g)
		first := tpChat(t, url, system, "first question")
		if first.estimated != "true" || first.prompt == 0 {
			t.Errorf("group %d first request: estimated %q, prompt tokens %d; want an estimate", g, first.estimated, first.prompt)
		}
		for i := range 4 {
			r := tpChat(t, url, system, fmt.Sprintf("follow-up number %d about it", i))
			if r.replica != first.replica {
				t.Errorf("group %d repeat %d went to %s, the prefix is on %s", g, i, r.replica, first.replica)
			}
			if r.cached < 3000 {
				t.Errorf("group %d repeat %d: the engine found %d tokens cached, want the ~3,600 of the system prompt", g, i, r.cached)
			}
			if r.predicted < r.prompt/2 || r.estimated != "true" {
				t.Errorf("group %d repeat %d: predicted %d cached of %d estimated prompt tokens (estimated %q)", g, i, r.predicted, r.prompt, r.estimated)
			}
		}
	}
}

// TestTextPrefixAffinity runs the real binary with no tokenizer configured:
// static replicas (engines without a sidecar) and a gossip fleet whose
// sidecars publish exact summaries the text identity cannot match. In both,
// a repeated long prompt lands where it is cached.
func TestTextPrefixAffinity(t *testing.T) {
	bin := scBuild(t)
	t.Run("StaticReplicas", func(t *testing.T) {
		var replicas strings.Builder
		for i := range 3 {
			sim := gwStartSim(t, bin, fmt.Sprintf("sim-%d", i), "--zero-latency", "--enable-prompt-tokens-details")
			fmt.Fprintf(&replicas, "  - {name: engine-%d, url: %s, models: [e2e-model]}\n", i, sim.url)
		}
		b := tpStart(t, bin, "bal-static", "models:\n  - name: e2e-model\n    block_size: 16\ngossip:\n  enabled: false\nreplicas:\n"+replicas.String())
		scWait(t, "balancer health", func() error { return b.replicasHealthy(3) })
		tpAffinity(t, b.url)
		if n := btMetric(t, b, "inferrail_balancer_text_prefix_requests_total", ""); n != 15 {
			t.Errorf("%v requests routed on the text prefix, want 15", n)
		}
	})
	t.Run("GossipFleet", func(t *testing.T) {
		g := scFreePort(t)
		b := tpStart(t, bin, "bal-gossip", fmt.Sprintf("models:\n  - name: e2e-model\n    block_size: 16\n"+
			"gossip:\n  enabled: true\n  bind: 127.0.0.1:%d\n  node_name: bal-gossip\n  profile: local\n", g))
		for i := range 3 {
			sim := btStartSim(t, bin, fmt.Sprintf("sim-%d", i), 4000, "--zero-latency")
			scStartSidecar(t, bin, sim.url, sim.pub, sim.replay,
				"--node-name", fmt.Sprintf("replica-%d", i), "--join", fmt.Sprintf("127.0.0.1:%d", g), "--model", "e2e-model")
		}
		scWait(t, "balancer sees every replica healthy", func() error { return b.replicasHealthy(3) })
		tpAffinity(t, b.url)
		if n := btMetric(t, b, "inferrail_balancer_unpredicted_total", ""); n != 0 {
			t.Errorf("%v requests routed without a prediction", n)
		}
	})
}
