package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// kmHold starts a long stream straight at an engine (past its sidecar and
// every balancer) and returns once its first token is out: its prompt's KV
// blocks are then held, and published, until the test ends.
func kmHold(t *testing.T, engineURL, prompt string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":1000,"ignore_eos":true,"stream":true}`, prompt)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, engineURL+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("engine: %s: %s", resp.Status, b)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before a token: %v", err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"text":"`) && !strings.Contains(line, `"text":""`) {
			return
		}
	}
}

// kmReplica is one replica as the balancer's GET /v1/replicas shows it.
type kmReplica struct {
	Name             string `json:"name"`
	KVCapacityBlocks int    `json:"kv_capacity_blocks"`
	Load             *struct {
		KVUsage float64 `json:"kv_cache_usage"`
	} `json:"load"`
}

// TestKVMemoryBound checks, through the real binaries, that a sidecar
// advertises its engine's KV capacity and that cost_model does not send a
// request to the replica holding its prefix when that replica's KV memory
// cannot hold the rest of the prompt: it goes to the replica with room
// (reason kv_spill) instead of waiting there for decodes to finish.
func TestKVMemoryBound(t *testing.T) {
	bin := scBuild(t)
	const blocks = 600 // 9,600 tokens of KV per engine
	f := btStartFleet(t, bin, 2, blocks, []string{"bal-kv"})
	bal := f.bals[0]

	var reps []kmReplica
	scWait(t, "capacities advertised", func() error {
		if err := scGetJSON(bal.admin+"/v1/replicas", &reps); err != nil {
			return err
		}
		for _, r := range reps {
			if r.KVCapacityBlocks != blocks {
				return fmt.Errorf("%s: kv_capacity_blocks %d, want %d", r.Name, r.KVCapacityBlocks, blocks)
			}
		}
		return nil
	})

	// replica-0 holds a shared document (about 4,000 tokens) and an
	// unrelated one (about 4,400): its KV memory is nearly full.
	doc := strings.TrimSpace(strings.Repeat("the shared document every question quotes at length. ", 200))
	other := strings.TrimSpace(strings.Repeat("an unrelated story that fills the memory of the engine. ", 200))
	kmHold(t, f.sims[0].url, doc)
	kmHold(t, f.sims[0].url, other)
	scWait(t, "replica-0's prefix summary and KV usage at the balancer", func() error {
		if err := scGetJSON(bal.admin+"/v1/replicas", &reps); err != nil {
			return err
		}
		for _, r := range reps {
			if r.Name == "replica-0" && (r.Load == nil || r.Load.KVUsage < 0.85) {
				return fmt.Errorf("replica-0 load %+v", r.Load)
			}
		}
		return nil
	})

	// A question on the document: replica-0 holds the document, but not
	// the memory for the question's 1,500 tokens beside what it runs.
	q := doc + " " + strings.Repeat("now a question about it that needs its own blocks. ", 75)
	scWait(t, "replica-0's summary at the balancer holding both documents", func() error {
		var body struct {
			Members []struct {
				Name    string `json:"name"`
				Summary *struct {
					Blocks map[string]int `json:"blocks"`
				} `json:"summary"`
			} `json:"members"`
		}
		if err := scGetJSON(bal.admin+"/v1/gossip/state", &body); err != nil {
			return err
		}
		for _, m := range body.Members {
			if m.Name == "replica-0" && m.Summary != nil && m.Summary.Blocks["gpu"] >= 450 {
				return nil
			}
		}
		return fmt.Errorf("replica-0's summary not yet holding the documents")
	})
	before := btMetric(t, bal, "inferrail_balancer_route_decisions_total", `reason="kv_spill"`)
	got := btComplete(bal.url, q, 4)
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.replica != "replica-1" {
		t.Errorf("the question went to %s (predicted %d cached tokens), want replica-1, the one with KV room", got.replica, got.predicted)
	}
	if after := btMetric(t, bal, "inferrail_balancer_route_decisions_total", `reason="kv_spill"`); after != before+1 {
		t.Errorf("kv_spill decisions %v → %v, want one more", before, after)
	}
}
