package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// ltEngine is the simulator's scheduler state (GET /inferrail/debug/load).
type ltEngine struct {
	Running, Waiting, Decoding                     int
	BeforeFirstToken, BeforeFirstTokenPromptTokens int
}

func ltSim(t *testing.T, sim *scSim) ltEngine {
	t.Helper()
	var body struct {
		Ranks []struct {
			Engine ltEngine `json:"engine"`
		} `json:"ranks"`
	}
	if err := scGetJSON(sim.url+"/inferrail/debug/load", &body); err != nil || len(body.Ranks) != 1 {
		t.Fatalf("sim load: %v (%d ranks)", err, len(body.Ranks))
	}
	return body.Ranks[0].Engine
}

// ltDataPath is the sidecar's data-path counts (GET /v1/load).
type ltDataPath struct {
	InFlight             int `json:"in_flight"`
	Prefilling           int `json:"prefilling"`
	WaitingPrefillTokens int `json:"waiting_prefill_tokens"`
}

func ltSidecar(t *testing.T, sc *scSidecar) ltDataPath {
	t.Helper()
	var body struct {
		DataPath ltDataPath `json:"data_path"`
	}
	if err := scGetJSON(sc.admin+"/v1/load", &body); err != nil {
		t.Fatalf("sidecar load: %v", err)
	}
	return body.DataPath
}

// ltBalancer is the balancer's own counts for the replica.
type ltBalancer struct{ inFlight, pending, tokens float64 }

func ltBal(t *testing.T, b *btBalancer) ltBalancer {
	t.Helper()
	l := `replica="replica-0"`
	return ltBalancer{btMetric(t, b, "inferrail_balancer_replica_in_flight", l),
		btMetric(t, b, "inferrail_balancer_replica_pending", l),
		btMetric(t, b, "inferrail_balancer_replica_pending_prefill_tokens", l)}
}

// TestLoadAccounting checks, through the real binaries, that the sidecar and
// the balancer count a request's prefill as pending until its first token,
// not its response headers, and never count a decode as queued prefill,
// against the simulator's own scheduler state. The simulator is slow (2,000
// prompt tokens a second) so that each phase lasts long enough to be read
// without racing it.
func TestLoadAccounting(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 1, 8000, []string{"bal-load"}, "--linear-tokens-per-second", "2000", "--max-num-batched-tokens", "512")
	sim, sc, bal := f.sims[0], f.sidecars[0], f.bals[0]
	prompt := strings.TrimSpace(strings.Repeat("words of a long prompt that takes the slow engine a while. ", 100)) // about 2,400 tokens

	t.Run("stream", func(t *testing.T) {
		body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":300,"ignore_eos":true,"stream":true}`, prompt+" stream")
		// The balancer answers a stream's headers with its first event
		// (it checks the answer's first bytes, docs/balancer.md), so the
		// prefill is read while the client still waits for them.
		type answer struct {
			resp *http.Response
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			resp, err := http.Post(bal.url+"/v1/completions", "application/json", strings.NewReader(body))
			got <- answer{resp, err}
		}()
		var eng ltEngine
		scWait(t, "the engine prefilling the request", func() error {
			if eng = ltSim(t, sim); eng.BeforeFirstToken != 1 {
				return fmt.Errorf("engine state %+v, want the request before its first token", eng)
			}
			return nil
		})
		// The sidecar counts the prompt beside forwarding it
		// (docs/sidecar.md), so its count may land just after the engine
		// has the request; the prefill (about a second) is not over.
		var dp ltDataPath
		scWait(t, "the sidecar counting the prompt", func() error {
			if dp = ltSidecar(t, sc); dp.WaitingPrefillTokens == 0 {
				return fmt.Errorf("sidecar %+v, no prompt counted yet", dp)
			}
			return nil
		})
		b := ltBal(t, bal)
		if eng := ltSim(t, sim); eng.BeforeFirstToken != 1 {
			t.Fatalf("the prefill ended before the counts were read: %+v", eng)
		}
		if dp.InFlight != 1 || dp.Prefilling != 1 || dp.WaitingPrefillTokens != eng.BeforeFirstTokenPromptTokens {
			t.Errorf("sidecar during the prefill: %+v, want 1 prefilling with the engine's %d prompt tokens", dp, eng.BeforeFirstTokenPromptTokens)
		}
		a := <-got
		if a.err != nil {
			t.Fatal(a.err)
		}
		resp := a.resp
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %s", resp.Status)
		}
		if v := resp.Header.Get("Endpoint-Load-Metrics"); v != "" {
			t.Errorf("the client sees the sidecar's load report %q", v)
		}
		// The balancer counted the tokens it predicted uncached.
		predicted, _ := strconv.Atoi(resp.Header.Get("X-Inferrail-Cached-Tokens"))
		if b.inFlight != 1 || b.pending != 1 || int(b.tokens) != eng.BeforeFirstTokenPromptTokens-predicted {
			t.Errorf("balancer during the prefill: %+v, want 1 pending with %d-%d tokens", b, eng.BeforeFirstTokenPromptTokens, predicted)
		}
		// Read up to the first content token.
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before a token: %v", err)
			}
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"text":"`) && !strings.Contains(line, `"text":""`) {
				break
			}
		}
		scWait(t, "prefill over at the sidecar and the balancer", func() error {
			eng, dp, b := ltSim(t, sim), ltSidecar(t, sc), ltBal(t, bal)
			if eng.BeforeFirstToken != 0 || eng.Decoding != 1 {
				return fmt.Errorf("engine %+v not decoding", eng)
			}
			if dp.InFlight != 1 || dp.Prefilling != 0 || dp.WaitingPrefillTokens != 0 {
				return fmt.Errorf("sidecar %+v, want 1 in flight, nothing prefilling", dp)
			}
			if b.inFlight != 1 || b.pending != 0 || b.tokens != 0 {
				return fmt.Errorf("balancer %+v, want 1 in flight, nothing pending", b)
			}
			return nil
		})
		if eng := ltSim(t, sim); eng.Decoding != 1 {
			t.Fatalf("the decode ended before the check: %+v", eng)
		}
	})

	t.Run("non-streaming", func(t *testing.T) {
		done := make(chan btResult, 1)
		go func() { done <- btComplete(bal.url, prompt+" plain", 100) }()
		scWait(t, "engine decoding the request", func() error {
			if eng := ltSim(t, sim); eng.Decoding != 1 || eng.BeforeFirstToken != 0 {
				return fmt.Errorf("engine %+v", eng)
			}
			return nil
		})
		// Its decode is not queued prefill: the sidecar learns from the
		// engine's running count, the balancer from its estimate.
		scWait(t, "decode not counted as prefill", func() error {
			dp, b := ltSidecar(t, sc), ltBal(t, bal)
			if dp.InFlight != 1 || dp.Prefilling != 0 {
				return fmt.Errorf("sidecar %+v, want 1 in flight, not prefilling", dp)
			}
			if b.inFlight != 1 || b.pending != 0 {
				return fmt.Errorf("balancer %+v, want 1 in flight, not pending", b)
			}
			return nil
		})
		select {
		case r := <-done:
			t.Fatalf("the response came before the check: %d %v", r.status, r.err)
		default:
		}
		if r := <-done; r.err != nil {
			t.Fatal(r.err)
		}
		if n := btMetric(t, bal, "inferrail_balancer_load_reports_total", `result="ok"`); n < 2 {
			t.Errorf("balancer read %v load reports from responses, want at least 2", n)
		}
	})
}
