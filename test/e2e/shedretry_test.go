package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestShedRefusalsRetriedByTheLoadGenerator, through the real binaries: a
// balancer with shed_delay refuses what it cannot start in time (503 with
// Retry-After), and `inferrail bench run --retries` sends those requests
// again after the wait, as OpenAI's clients do, with the wait in their
// TTFT; without --retries a refusal fails the request. Every refusal the
// client saw is one the balancer counted as shed, and nothing else: a
// request is never sent twice once a replica has it.
func TestShedRefusalsRetriedByTheLoadGenerator(t *testing.T) {
	bin := scBuild(t)
	routing := filepath.Join(t.TempDir(), "shed.yaml")
	// 1 ms: any request in flight on the one replica delays a new one past
	// it, so a burst is refused but for its first request.
	if err := os.WriteFile(routing, []byte("shed_delay: 1ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := uiStartDev(t, bin, 1, "--routing", routing)
	metrics := strings.TrimSuffix(dev.balancer, "ui/") + "metrics"

	type record struct {
		Status  int   `json:"status"`
		Retries int   `json:"retries"`
		TTFT    int64 `json:"ttft_ns"`
	}
	run := func(retries int) []record {
		t.Helper()
		out := filepath.Join(t.TempDir(), "run.json")
		// A burst of about ten 1,024-token prompts within half a second.
		ctx, cancel := context.WithTimeout(context.Background(), scGuard)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "bench", "run", "--target", dev.client, "--model", dev.modelName,
			"--workload", "W6", "--rate", "20", "--duration", "500ms", "--warmup", "0s", "--drain", "40s",
			"--retries", strconv.Itoa(retries), "--out", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bench run --retries %d: %v\n%s", retries, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var res struct{ Records []record }
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Records) < 3 {
			t.Fatalf("bench run sent %d requests, want a burst of several", len(res.Records))
		}
		return res.Records
	}
	// shed is the balancer's count of requests it refused as shed.
	shed := func() int {
		t.Helper()
		n := 0.0
		if f := mcScrape(t, metrics)["inferrail_balancer_requests_total"]; f != nil {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" && l.GetValue() == "shed" {
						n += m.GetCounter().GetValue()
					}
				}
			}
		}
		return int(n)
	}
	refusals := func(recs []record) int {
		n := 0
		for _, r := range recs {
			n += r.Retries
			if r.Status == http.StatusServiceUnavailable {
				n++
			}
		}
		return n
	}

	before := shed()
	recs := run(5)
	answeredAfterRetry := 0
	for i, r := range recs {
		switch {
		case r.Status != http.StatusOK && r.Status != http.StatusServiceUnavailable:
			t.Errorf("request %d: status %d, want 200 or a refusal", i, r.Status)
		case r.Status == http.StatusServiceUnavailable && r.Retries != 5:
			t.Errorf("request %d refused after %d retries, want all 5 spent", i, r.Retries)
		case r.Status == http.StatusOK && r.Retries > 0:
			answeredAfterRetry++
			if r.TTFT < 1e9 {
				t.Errorf("request %d answered after %d retries with TTFT %v ms, want the Retry-After wait (at least 1 s) in it", i, r.Retries, r.TTFT/1e6)
			}
		}
	}
	if answeredAfterRetry == 0 {
		t.Fatalf("no refused request was answered on a retry: %+v", recs)
	}
	t.Logf("--retries 5: %d requests, %d refusals, %d answered after a retry", len(recs), refusals(recs), answeredAfterRetry)
	if got, want := shed()-before, refusals(recs); got != want {
		t.Errorf("balancer counted %d shed, the client saw %d refusals", got, want)
	}

	before = shed()
	recs = run(0)
	refused := 0
	for i, r := range recs {
		if r.Retries != 0 {
			t.Errorf("request %d retried %d times without --retries", i, r.Retries)
		}
		if r.Status == http.StatusServiceUnavailable {
			refused++
		}
	}
	if refused == 0 {
		t.Fatalf("no request of the burst refused: %+v", recs)
	}
	t.Logf("no retries: %d requests, %d refused", len(recs), refused)
	if got := shed() - before; got != refused {
		t.Errorf("balancer counted %d shed, the client saw %d refusals", got, refused)
	}
}
