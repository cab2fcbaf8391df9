package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/load"
)

// kuStatus is the sidecar's GET /v1/load, the parts this test reads.
type kuStatus struct {
	Engine struct {
		KVUsage float64 `json:"KVUsage"`
	} `json:"engine"`
	DataPath struct {
		InFlight     int   `json:"in_flight"`
		PromptTokens int64 `json:"prompt_tokens"`
	} `json:"data_path"`
	ScrapedAt         time.Time `json:"scraped_at"`
	UnscrapedKVTokens int64     `json:"unscraped_kv_tokens"`
	KVCapacityTokens  int64     `json:"kv_capacity_tokens"`
}

// kuSimEngine is the simulator's engine state now (GET
// /inferrail/debug/load), the parts these tests read.
type kuSimEngine struct {
	KVUsage      float64
	TotalBlocks  int
	CachedBlocks int64
}

func kuSim(t *testing.T, sim *scSim) kuSimEngine {
	t.Helper()
	var body struct {
		Ranks []struct {
			Engine kuSimEngine `json:"engine"`
		} `json:"ranks"`
	}
	if err := scGetJSON(sim.url+"/inferrail/debug/load", &body); err != nil || len(body.Ranks) != 1 {
		t.Fatalf("sim load: %v (%d ranks)", err, len(body.Ranks))
	}
	return body.Ranks[0].Engine
}

// kuSimKV returns the simulator's KV memory in use, in tokens, now.
func kuSimKV(t *testing.T, sim *scSim) float64 {
	e := kuSim(t, sim)
	return e.KVUsage * float64(e.TotalBlocks) * 16
}

// kuReport sends a non-streaming completion of prompt through the sidecar
// as balancer origin and returns the load report of its response.
func kuReport(t *testing.T, sc *scSidecar, origin, prompt string) load.Report {
	t.Helper()
	body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":1}`, prompt)
	req, _ := http.NewRequest(http.MethodPost, sc.data+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(load.Origin, origin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("request: %s", resp.Status)
	}
	r, _, err := load.ParseHeader(resp.Header.Get(load.Header))
	if err != nil {
		t.Fatalf("the response's load report: %v", err)
	}
	return r
}

// TestKVUsageBetweenScrapes checks, through the real binaries, that the KV
// usage a sidecar reports to its balancers is the engine's now, not at its
// last scrape: streams that got their first token after the scrape hold
// memory the scraped usage lacks, and the report counts them. The scrape
// interval is long (12 s) so that the whole check falls between two scrapes.
func TestKVUsageBetweenScrapes(t *testing.T) {
	bin := scBuild(t)
	sim := btStartSim(t, bin, "sim-kv", 4096)
	sc := scStartSidecar(t, bin, sim.url, sim.pub, sim.replay, "--scrape-interval", "12s", "--model", "e2e-model")
	var before kuStatus
	scWait(t, "the sidecar's first scrape", func() error {
		if err := scGetJSON(sc.admin+"/v1/load", &before); err != nil {
			return err
		}
		if before.ScrapedAt.IsZero() || before.KVCapacityTokens != 4096*16 {
			return fmt.Errorf("load %+v: no scrape with the engine's capacity yet", before)
		}
		return nil
	})

	// Three streams of about 3,000 prompt tokens each, read to their first
	// token and left decoding.
	for i := range 3 {
		prompt := fmt.Sprintf("stream %d: %s", i, strings.Repeat(fmt.Sprintf("words %d of a long prompt held in memory. ", i), 150))
		body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":4000,"ignore_eos":true,"stream":true}`, prompt)
		req, _ := http.NewRequest(http.MethodPost, sc.data+"/v1/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(load.Origin, "bal-kv")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %s", i, resp.Status)
		}
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream %d ended before a token: %v", i, err)
			}
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"text":"`) && !strings.Contains(line, `"text":""`) {
				break
			}
		}
	}

	// A fourth request's report, as a balancer reads it. The sidecar ends
	// that request a moment after its client has the answer (its handler
	// returns after the last write, and the request's end waits for the
	// prompt's count), so the data path is read once it has: with the
	// fourth still in flight its prompt counts as in flight but not yet as
	// memory in use (seen once: 7,222 prompt tokens against 7,215).
	report := kuReport(t, sc, "bal-kv", "a short question")
	engineKV := kuSimKV(t, sim)
	var now kuStatus
	scWait(t, "the fourth request's end", func() error {
		if err := scGetJSON(sc.admin+"/v1/load", &now); err != nil {
			return err
		}
		if now.DataPath.InFlight != 3 {
			return fmt.Errorf("%d requests in flight, want the 3 streams", now.DataPath.InFlight)
		}
		return nil
	})
	if !now.ScrapedAt.Equal(before.ScrapedAt) {
		t.Fatalf("a scrape came during the check (%s, then %s): the check is not between two scrapes",
			before.ScrapedAt.Format(time.StampMilli), now.ScrapedAt.Format(time.StampMilli))
	}
	capacity := float64(now.KVCapacityTokens)
	scraped, reported := now.Engine.KVUsage*capacity, report.KVUsage*capacity
	t.Logf("engine %.0f tokens in use; scraped %.0f; unscraped %d; reported %.0f; prompts in flight %d",
		engineKV, scraped, now.UnscrapedKVTokens, reported, now.DataPath.PromptTokens)
	if now.DataPath.InFlight != 3 || now.UnscrapedKVTokens != now.DataPath.PromptTokens {
		t.Errorf("the data path counts %d unscraped tokens with %d requests in flight, want the 3 streams' %d prompt tokens",
			now.UnscrapedKVTokens, now.DataPath.InFlight, now.DataPath.PromptTokens)
	}
	if engineKV < float64(now.DataPath.PromptTokens) {
		t.Fatalf("the engine holds %.0f tokens, fewer than the three prompts' %d", engineKV, now.DataPath.PromptTokens)
	}
	if scraped > 0.1*engineKV {
		t.Errorf("the scraped usage (%.0f tokens) already shows the streams: the check shows no lag", scraped)
	}
	// The report may lag the engine by the tokens decoded since the first
	// tokens (a few hundred) and a block per prompt, never by the prompts.
	if reported < 0.8*engineKV || reported > engineKV+3*16 {
		t.Errorf("the report says %.0f tokens in use, the engine %.0f", reported, engineKV)
	}
}

// TestBlocksHeldReported checks, through the real binaries, that the load
// report a sidecar returns to its balancers counts the blocks its engine
// holds in KV memory (the cached contexts of finished requests included,
// which the KV usage leaves out): the number the engine's own scheduler
// holds, from the engine's KV events. A balancer tells by it a replica that
// holds nothing from one whose memory is full of contexts.
func TestBlocksHeldReported(t *testing.T) {
	bin := scBuild(t)
	sim := btStartSim(t, bin, "sim-held", 4096)
	sc := scStartSidecar(t, bin, sim.url, sim.pub, sim.replay, "--model", "e2e-model")
	send := func(prompt string) load.Report { return kuReport(t, sc, "bal-held", prompt) }
	prompts := make([]string, 3)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("context %d: %s", i, strings.Repeat(fmt.Sprintf("words %d of a prompt kept in the prefix cache. ", i), 150))
		send(prompts[i])
	}
	// The requests ended: the engine holds their blocks as cached contexts,
	// with nothing running.
	cached := kuSim(t, sim).CachedBlocks
	if cached < 3*100 {
		t.Fatalf("the engine holds %d blocks after three prompts of about 1,500 tokens each", cached)
	}
	var st struct {
		HeldBlocks int64 `json:"blocks_held"`
		Engine     struct {
			KVUsage float64 `json:"KVUsage"`
		} `json:"engine"`
	}
	scWait(t, "the sidecar's block set to hold the engine's blocks", func() error {
		if err := scGetJSON(sc.admin+"/v1/load", &st); err != nil {
			return err
		}
		if st.HeldBlocks != cached {
			return fmt.Errorf("the sidecar counts %d blocks held, the engine %d", st.HeldBlocks, cached)
		}
		return nil
	})
	// A repeated prompt adds no block; its response reports them all.
	r := send(prompts[0])
	if got := kuSim(t, sim).CachedBlocks; got != cached {
		t.Fatalf("the repeated prompt changed the engine's cache: %d blocks, then %d", cached, got)
	}
	if r.HeldBlocks != cached {
		t.Errorf("the response's report says %d blocks held, the engine holds %d", r.HeldBlocks, cached)
	}
	if r.KVUsage*4096 >= float64(cached)/2 {
		t.Errorf("the report's KV usage %.3f counts the cached contexts: the check shows nothing the usage did not", r.KVUsage)
	}
}
