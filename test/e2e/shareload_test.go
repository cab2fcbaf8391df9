package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// slExplain is the part of a balancer's POST /v1/explain answer this test
// reads: each candidate's queue as the balancer's load model sees it.
type slExplain struct {
	Candidates []struct {
		ID            string `json:"id"`
		InFlight      int    `json:"in_flight"`
		Pending       int    `json:"pending"`
		PrefillTokens int64  `json:"prefill_tokens"`
	} `json:"candidates"`
}

// TestBalancersShareLoad checks, through the real binaries, that a request
// one balancer is proxying counts in another balancer's view of its replica
// while the engine is still prefilling it, and leaves it when it ends: the
// sidecars announce their load only every 10 s here, and the second
// balancer proxies nothing, so only the load the first one sends over the
// gossip (gossip.share_load) can tell it.
func TestBalancersShareLoad(t *testing.T) {
	bin := scBuild(t)
	cfg := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(cfg, []byte("gossip:\n  load_interval: 10s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := btStartFleetWith(t, bin, 2, 8000, []string{"bal-load-a", "bal-load-b"}, []string{"--config", cfg},
		"--linear-tokens-per-second", "2000", "--max-num-batched-tokens", "512")
	a, b := f.bals[0], f.bals[1]
	prompt := strings.TrimSpace(strings.Repeat("one balancer sends this and the other must count it. ", 100))
	queue := func() slExplain {
		var ex slExplain
		btExplain(t, b, prompt, 1, &ex)
		return ex
	}
	for _, c := range queue().Candidates {
		if c.InFlight != 0 {
			t.Fatalf("before any request bal-load-b counts %d in flight on %s", c.InFlight, c.ID)
		}
	}
	done, prefilling := btSendWhilePrefilling(t, f, a, prompt)
	home := fmt.Sprintf("replica-%d", prefilling)
	scWait(t, "the other balancer counting the request on "+home, func() error {
		ex := queue()
		for _, c := range ex.Candidates {
			if c.ID == home && c.InFlight == 1 && c.Pending == 1 && c.PrefillTokens > 500 {
				return nil
			}
		}
		return fmt.Errorf("candidates %+v", ex.Candidates)
	})
	if eng := ltSim(t, f.sims[prefilling]); eng.BeforeFirstToken != 1 {
		t.Fatalf("the prefill ended before the load was read (%+v)", eng)
	}
	for _, c := range queue().Candidates {
		if c.ID != home && c.InFlight != 0 {
			t.Errorf("bal-load-b counts %d in flight on %s, which has none", c.InFlight, c.ID)
		}
	}
	if r := <-done; r.err != nil || r.status != http.StatusOK || r.replica != home {
		t.Fatalf("the request: %+v, want 200 from %s", r, home)
	}
	scWait(t, "the other balancer seeing the request end", func() error {
		for _, c := range queue().Candidates {
			if c.InFlight != 0 {
				return fmt.Errorf("%s: %d in flight", c.ID, c.InFlight)
			}
		}
		return nil
	})
	if got := btMetric(t, b, "inferrail_gossip_messages_total", `dir="in",type="load"`); got < 1 {
		t.Errorf("bal-load-b received %v load messages", got)
	}
}
