package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// spExplain is the part of a balancer's POST /v1/explain answer the test
// reads: each candidate's predicted cached tokens.
type spExplain struct {
	PromptTokens int      `json:"prompt_tokens"`
	Blocks       []string `json:"blocks"`
	Candidates   []struct {
		ID           string `json:"id"`
		CachedTokens *int   `json:"predicted_cached_tokens"`
	} `json:"candidates"`
}

// btExplain decodes b's POST /v1/explain answer for a completions request
// with prompt into out (explain sends nothing upstream).
func btExplain(t *testing.T, b *btBalancer, prompt string, maxTokens int, out any) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":%d}`, prompt, maxTokens)
	resp, err := http.Post(b.admin+"/v1/explain?route=completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, out) != nil {
		t.Fatalf("explain: %s %s", resp.Status, raw)
	}
}

func spExplainOf(t *testing.T, b *btBalancer, prompt string) spExplain {
	t.Helper()
	var ex spExplain
	btExplain(t, b, prompt, 1, &ex)
	return ex
}

// TestBalancersSharePlacements checks, through the real binaries, that a
// prompt one balancer has just sent to a replica is predicted cached there
// by another balancer while the engine is still prefilling it: before any
// summary can hold its blocks, only the placement the first balancer shared
// over the gossip can say where it went. The engine is slow (2,000 prompt
// tokens a second), so the prefill lasts about a second.
func TestBalancersSharePlacements(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 2, 8000, []string{"bal-share-a", "bal-share-b"},
		"--linear-tokens-per-second", "2000", "--max-num-batched-tokens", "512")
	a, b := f.bals[0], f.bals[1]
	prompt := strings.TrimSpace(strings.Repeat("a long prompt that one balancer places and another must find. ", 90))

	// Before any request every replica's summary, once it has arrived, holds
	// nothing (until then a replica's prefix_hash owner is assumed to hold
	// the prompt's first blocks: the summary fallback).
	scWait(t, "bal-share-b predicting nothing cached anywhere", func() error {
		for _, c := range spExplainOf(t, b, prompt).Candidates {
			if c.CachedTokens == nil || *c.CachedTokens != 0 {
				return fmt.Errorf("%s: %v cached tokens", c.ID, c.CachedTokens)
			}
		}
		return nil
	})
	done, prefilling := btSendWhilePrefilling(t, f, a, prompt)
	home := fmt.Sprintf("replica-%d", prefilling)
	var ex spExplain
	scWait(t, "the other balancer predicting the prompt on "+home, func() error {
		ex = spExplainOf(t, b, prompt)
		for _, c := range ex.Candidates {
			if c.ID == home && c.CachedTokens != nil && *c.CachedTokens == 16*len(ex.Blocks) {
				return nil
			}
		}
		return fmt.Errorf("candidates %+v", ex.Candidates)
	})
	if eng := ltSim(t, f.sims[prefilling]); eng.BeforeFirstToken != 1 {
		t.Fatalf("the prefill ended before the prediction was read (%+v): the summary may have said it", eng)
	}
	for _, c := range ex.Candidates {
		if c.ID != home && (c.CachedTokens == nil || *c.CachedTokens != 0) {
			t.Errorf("bal-share-b predicts %v cached tokens on %s, which never saw the prompt", c.CachedTokens, c.ID)
		}
	}
	r := <-done
	if r.err != nil || r.status != http.StatusOK || r.replica != home {
		t.Fatalf("the request: %+v, want 200 from %s", r, home)
	}
	if got := btMetric(t, a, "inferrail_balancer_shared_placements_total", `result="sent"`); got < 1 {
		t.Errorf("bal-share-a sent %v placements", got)
	}
	if got := btMetric(t, b, "inferrail_balancer_shared_placements_total", `result="learned"`); got < 1 {
		t.Errorf("bal-share-b learned %v placements", got)
	}
}

// btSendWhilePrefilling sends prompt through b in the background and waits
// for the engine that prefills it: it returns the request's result channel
// and that engine's index in f.sims.
func btSendWhilePrefilling(t *testing.T, f *btFleet, b *btBalancer, prompt string) (<-chan btResult, int) {
	t.Helper()
	done := make(chan btResult, 1)
	go func() { done <- btComplete(b.url, prompt, 1) }()
	prefilling := -1
	scWait(t, "an engine prefilling the prompt", func() error {
		for i, sim := range f.sims {
			if ltSim(t, sim).BeforeFirstToken == 1 {
				prefilling = i
				return nil
			}
		}
		return fmt.Errorf("no engine prefilling")
	})
	return done, prefilling
}
