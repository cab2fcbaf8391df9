package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// tgDecision is one decision of GET /debug/decisions.
type tgDecision struct {
	Winner string `json:"winner"`
	Reason string `json:"reason"`
}

// tgDecisions returns the balancer's logged decisions, oldest first.
func tgDecisions(admin string) ([]tgDecision, error) {
	var dr struct {
		Decisions []tgDecision `json:"decisions"`
	}
	err := scGetJSON(admin+"/debug/decisions", &dr)
	return dr.Decisions, err
}

// TestTPOTGuard checks cost_model's TPOT guard through the real binaries
// (docs/routing.md#the-tpot-guard): on simulators whose steps take 500 ms, a
// 16,000-token prompt is not sent to the idle replica where a 3-token answer
// the balancer has just sent streams (two gaps of a 600 ms objective: one
// step of the prompt's prefill, 170 ms more, breaks it), but to the one where
// it queues behind a 4,000-token prompt (reason tpot_guard).
func TestTPOTGuard(t *testing.T) {
	bin := scBuild(t)
	const routing = `{spread_margin: 0, slo: {tpot: 600ms}, cost_model: {step_overhead: 500ms}}`
	bal := btStartBalancerRouting(t, bin, "bal-tpot", nil, "500ms", routing)
	for i := range 2 {
		sim := btStartSim(t, bin, fmt.Sprintf("sim-%d", i), 4096, "--step-overhead", "500ms")
		scStartSidecar(t, bin, sim.url, sim.pub, sim.replay,
			"--node-name", fmt.Sprintf("replica-%d", i), "--join", bal.gossip, "--model", "e2e-model")
	}
	scWait(t, "balancer sees both replicas healthy", func() error { return bal.replicasHealthy(2) })

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	send := func(content string, maxTokens int) {
		body := fmt.Sprintf(`{"model":"e2e-model","stream":true,"max_tokens":%d,"ignore_eos":true,"messages":[{"role":"user","content":%q}]}`, maxTokens, content)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, bal.url+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	// decided waits for the n-th decision and returns it.
	decided := func(n int) tgDecision {
		t.Helper()
		var d tgDecision
		scWait(t, fmt.Sprintf("decision %d", n), func() error {
			ds, err := tgDecisions(bal.admin)
			if err != nil {
				return err
			}
			if len(ds) < n {
				return fmt.Errorf("%d decisions", len(ds))
			}
			d = ds[n-1]
			return nil
		})
		return d
	}
	words := func(tag string, n int) string { return tag + strings.Repeat(" lorem", n) }

	// A 4,000-token prompt: half a second or more of prefill on q.
	send(words("first", 2000), 8) // two tokens a word
	q := decided(1).Winner
	// A 3-token answer: the idle replica, a.
	send("a short question", 3)
	a := decided(2)
	if a.Winner == q || a.Winner == "" {
		t.Fatalf("the short answer went to %q (%s), the long prompt's queue is on %q", a.Winner, a.Reason, q)
	}
	// A 16,000-token prompt while both are still under way (the first
	// prompt's prefill ends 0.5 s after it was sent at the earliest, the
	// answer's last token 1.5 s): a's estimate is the lower, but the
	// answer's two gaps would carry the prompt's two steps.
	send(words("second", 8000), 8)
	if d := decided(3); d.Winner != q || d.Reason != "tpot_guard" {
		var raw any
		_ = scGetJSON(bal.admin+"/debug/decisions", &raw)
		t.Fatalf("the long prompt went to %s (%s), want %s (tpot_guard), away from the answer on %s; decisions: %v", d.Winner, d.Reason, q, a.Winner, raw)
	}
}
