package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// ltComplete sends a completion for model and returns the balancer's
// predicted cached tokens, the engine's reported cached tokens and the
// replica.
func ltComplete(t *testing.T, url, model, prompt string) (predicted, cached int, replica string) {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":4,"ignore_eos":true}`, model, prompt)
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %s", model, resp.Status, b)
	}
	var out struct {
		Model string `json:"model"`
		Usage struct {
			Details *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if out.Usage.Details != nil {
		cached = out.Usage.Details.CachedTokens
	}
	if out.Model != model {
		t.Errorf("answered for model %q, want %q", out.Model, model)
	}
	predicted, _ = strconv.Atoi(resp.Header.Get("X-Inferrail-Cached-Tokens"))
	return predicted, cached, resp.Header.Get("X-Inferrail-Replica")
}

// TestLoRARoutesOnTheAdaptersCache checks through the real binaries that a
// request for a LoRA adapter (which the balancer learns from the sidecars'
// gossip) is tokenized with the base model's tokenizer and hashed with the
// base model and the adapter, as the engine hashes it: the second request
// with a prefix goes where the first left it and the prediction is the
// engine's own cached count; the base model's cache is not the adapter's.
func TestLoRARoutesOnTheAdaptersCache(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-lora"}, "--lora-modules", "adapter-a=/adapters/a")
	bal := f.bals[0]
	scWait(t, "the balancer routes the adapter", func() error {
		resp, err := http.Post(bal.url+"/v1/completions", "application/json",
			strings.NewReader(`{"model":"adapter-a","prompt":"hello","max_tokens":1}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})
	// Until a replica's summary is fresh, predictions fall back to assuming
	// the prefix's prefix_hash owner holds its first blocks (by design).
	fresh := func(b *btBalancer) func() error {
		return func() error {
			if n := btMetric(t, b, "inferrail_balancer_replica_data_stale", `data="summary"`); n != 0 {
				return fmt.Errorf("%v stale summaries", n)
			}
			return nil
		}
	}
	scWait(t, "every replica's summary fresh", fresh(bal))
	prefix := strings.Repeat("an adapter's long shared instructions about its single task. ", 12)
	p0, c0, r0 := ltComplete(t, bal.url, "adapter-a", prefix+"first question")
	if c0 != 0 || p0 != 0 {
		t.Errorf("first adapter request: predicted %d, engine cached %d, want 0 and 0", p0, c0)
	}
	var idx int
	if _, err := fmt.Sscanf(r0, "replica-%d", &idx); err != nil {
		t.Fatalf("replica %q: %v", r0, err)
	}
	var sum scSummary
	scWait(t, "the adapter's blocks in "+r0+"'s summary", func() error {
		if err := scGetJSON(f.sidecars[idx].admin+"/v1/summary", &sum); err != nil {
			return err
		}
		if sum.Blocks["gpu"] < 15 {
			return fmt.Errorf("%d blocks", sum.Blocks["gpu"])
		}
		return nil
	})
	// A balancer that joins now has no placement of its own to remember:
	// its prediction can only come from the summaries, hashed with the base
	// model and the adapter.
	late := btStartBalancer(t, bin, "bal-late", []string{bal.gossip}, "500ms")
	scWait(t, "the late balancer sees every replica", func() error { return late.replicasHealthy(3) })
	scWait(t, "the late balancer's summaries fresh", fresh(late))
	scWait(t, "the late balancer holds "+r0+"'s summary with the adapter's blocks", func() error {
		var st struct {
			Members []struct {
				Name    string `json:"name"`
				Summary *struct {
					Blocks map[string]int `json:"blocks"`
				} `json:"summary"`
			} `json:"members"`
		}
		if err := scGetJSON(late.admin+"/v1/gossip/state", &st); err != nil {
			return err
		}
		for _, m := range st.Members {
			if m.Name == r0 && m.Summary != nil && m.Summary.Blocks["gpu"] >= sum.Blocks["gpu"] {
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	p, c, r := ltComplete(t, late.url, "adapter-a", prefix+"second question")
	if r != r0 || c == 0 || p != c {
		t.Errorf("second adapter request: replica %s (first %s), predicted %d, engine cached %d; want the same replica, predicted = cached > 0", r, r0, p, c)
	}
	// The same text for the base model shares nothing with the adapter.
	if p, c, r := ltComplete(t, late.url, "e2e-model", prefix+"second question"); r == r0 && c != 0 || p != c {
		t.Errorf("base model after the adapter: replica %s, predicted %d, engine cached %d; want no shared cache", r, p, c)
	}
}
