package devfleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/devfleet"
)

// getJSON decodes GET url into v.
func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// sidecarSummary is the part of a sidecar's GET /v1/summary the test reads.
type sidecarSummary struct {
	Source   string         `json:"source"`
	Complete bool           `json:"complete"`
	Epoch    uint64         `json:"epoch"`
	Seq      uint64         `json:"seq"`
	Blocks   map[string]int `json:"blocks"`
	FPRate   float64        `json:"fp_rate"`
}

// converged reports nil when, for every replica, the sidecar's block set is
// the engine's prefix cache (the same hashes) and the balancer's view of its
// summary is at the sidecar's version with as many blocks. held receives
// each engine's block hashes.
func converged(ctx context.Context, f *devfleet.Cluster, held map[string][]uint64) error {
	var st struct {
		Members []struct {
			Name    string `json:"name"`
			Summary *struct {
				Epoch  uint64         `json:"epoch"`
				Seq    uint64         `json:"seq"`
				Blocks map[string]int `json:"blocks"`
			} `json:"summary"`
		} `json:"members"`
	}
	if err := getJSON(ctx, f.Balancers[0].Admin+"/v1/gossip/state", &st); err != nil {
		return err
	}
	for _, r := range f.Replicas {
		var kv struct {
			Ranks []struct {
				Hashes []uint64 `json:"hashes"`
			} `json:"ranks"`
		}
		if err := getJSON(ctx, r.EngineURL+"/inferrail/debug/kv_cache", &kv); err != nil {
			return err
		}
		var engine []uint64
		for _, rk := range kv.Ranks {
			engine = append(engine, rk.Hashes...)
		}
		slices.Sort(engine)
		held[r.Name] = engine
		var dump struct {
			Blocks map[string][]uint64 `json:"blocks"`
		}
		if err := getJSON(ctx, r.SidecarAdmin+"/debug/blocks", &dump); err != nil {
			return err
		}
		var side []uint64
		for medium, hs := range dump.Blocks {
			if strings.EqualFold(medium, "gpu") {
				side = append(side, hs...)
			}
		}
		slices.Sort(side)
		if !slices.Equal(side, engine) {
			return fmt.Errorf("%s: sidecar holds %d blocks, engine %d, not the same", r.Name, len(side), len(engine))
		}
		var sc sidecarSummary
		if err := getJSON(ctx, r.SidecarAdmin+"/v1/summary", &sc); err != nil {
			return err
		}
		found := false
		for _, m := range st.Members {
			if m.Name != r.Name {
				continue
			}
			found = true
			if m.Summary == nil {
				return fmt.Errorf("balancer has no summary of %s", r.Name)
			}
			if m.Summary.Epoch != sc.Epoch || m.Summary.Seq != sc.Seq || m.Summary.Blocks["gpu"] != sc.Blocks["gpu"] {
				return fmt.Errorf("%s: balancer view %+v behind sidecar %d/%d with %d blocks", r.Name, m.Summary, sc.Epoch, sc.Seq, sc.Blocks["gpu"])
			}
		}
		if !found {
			return fmt.Errorf("balancer does not list %s", r.Name)
		}
	}
	return nil
}

// waitConverged polls converged until it has held for a few gossip periods
// (so the sidecars flushed whatever they had pending when their sets caught
// up with the engines, and the balancer applied it), or ctx ends. It returns
// each engine's block hashes.
func waitConverged(ctx context.Context, f *devfleet.Cluster) (map[string][]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	held := map[string][]uint64{}
	var since time.Time
	var last error // the last reason, not the deadline's
	for {
		err := converged(ctx, f, held)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				last = err
			}
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= 4*devfleet.ExactLoadInterval:
			return held, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("state never converged: %w", last)
		case <-t.C:
		}
	}
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chat sends one chat completion through the balancer and returns the
// balancer's predicted cached tokens, the engine's cached tokens from usage,
// the replica and the answer.
func chat(ctx context.Context, url, model string, msgs []chatMessage) (pred, cached int, replica, answer string, err error) {
	body, err := json.Marshal(map[string]any{"model": model, "max_tokens": 24, "messages": msgs})
	if err != nil {
		return 0, 0, "", "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return 0, 0, "", "", fmt.Errorf("status %s: %s", resp.Status, b.Bytes())
	}
	var out struct {
		Choices []struct {
			Message chatMessage `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, 0, "", "", fmt.Errorf("decode response: %w", err)
	}
	if len(out.Choices) != 1 {
		return 0, 0, "", "", fmt.Errorf("%d choices", len(out.Choices))
	}
	if d := out.Usage.PromptTokensDetails; d != nil {
		cached = d.CachedTokens
	}
	h := resp.Header.Get("x-inferrail-cached-tokens")
	if pred, err = strconv.Atoi(h); err != nil {
		return 0, 0, "", "", fmt.Errorf("x-inferrail-cached-tokens %q: %w", h, err)
	}
	return pred, cached, resp.Header.Get("x-inferrail-replica"), out.Choices[0].Message.Content, nil
}

// An exact-state fleet runs its children with the tight settings, and its
// balancer's prediction of each request's cached tokens equals what the
// engine then reports in usage: multi-turn conversations over shared system
// prompts, sent one after another, each once the state of the previous one
// has reached the balancer (which with exact-state takes milliseconds; the
// residual delay is what docs/dev-fleet.md lists). Generated tokens' blocks,
// which the balancer can only know from the engines' caches, are part of
// every later turn's prefix. Under cache pressure the engines evict, and the
// balancer must stop predicting evicted blocks; that needs the overlay off
// (it remembers placements, not evictions).
func TestExactStateFleetPredictsEngineCache(t *testing.T) {
	bin := buildBinary(t)
	tests := []struct {
		name       string
		blocks     int
		overlayTTL time.Duration
		minEvicted int
	}{
		{"roomy cache, default overlay", 8000, 0, 0},
		{"cache pressure, no overlay", 150, -1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testExactState(t, bin, tt.blocks, tt.overlayTTL, tt.minEvicted)
		})
	}
}

func testExactState(t *testing.T, bin string, blocks int, overlayTTL time.Duration, minEvicted int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	t.Cleanup(cancel)
	cfg := devfleet.DefaultConfig()
	cfg.Binary, cfg.Replicas, cfg.Balancers, cfg.Port = bin, 2, 1, 0
	cfg.ZeroLatency, cfg.CacheBlocks, cfg.OverlayTTL = true, blocks, overlayTTL
	cfg.ExactState = true
	cfg.LogDir = t.TempDir()
	f := startFleet(t, ctx, cfg)

	// The sidecars got the exact-state summary settings.
	for _, r := range f.Replicas {
		var sc sidecarSummary
		if err := getJSON(ctx, r.SidecarAdmin+"/v1/summary", &sc); err != nil {
			t.Fatal(err)
		}
		if sc.FPRate != devfleet.ExactFalsePositiveRate {
			t.Errorf("%s: fp_rate %v, want %v", r.Name, sc.FPRate, devfleet.ExactFalsePositiveRate)
		}
	}

	const groups, convs, requests = 3, 3, 45
	rnd := rand.New(rand.NewPCG(7, 7))
	systems := make([]string, groups)
	for g := range systems {
		words := make([]string, 150+60*g)
		for i := range words {
			words[i] = fmt.Sprintf("g%dw%d", g, i)
		}
		systems[g] = strings.Join(words, " ")
	}
	history := map[[2]int][]chatMessage{}
	replicas := map[string]int{}
	var hits, beyondSystem int
	seen := map[string]map[uint64]bool{} // every block each engine has held
	evicted := 0
	settle := func(k int) {
		held, err := waitConverged(ctx, f)
		if err != nil {
			t.Fatalf("before request %d: %v", k, err)
		}
		for name, hs := range held {
			now := make(map[uint64]bool, len(hs))
			for _, h := range hs {
				now[h] = true
			}
			if seen[name] == nil {
				seen[name] = map[uint64]bool{}
			}
			for h := range seen[name] {
				if !now[h] {
					evicted++
					delete(seen[name], h)
				}
			}
			for h := range now {
				seen[name][h] = true
			}
		}
	}
	for k := range requests {
		g, c := rnd.IntN(groups), rnd.IntN(convs)
		key := [2]int{g, c}
		msgs := history[key]
		if msgs == nil {
			msgs = []chatMessage{{Role: "system", Content: systems[g]}}
		}
		msgs = append(msgs, chatMessage{Role: "user", Content: fmt.Sprintf("turn %d of request %d: q%d q%d", len(msgs), k, rnd.IntN(1000), rnd.IntN(1000))})
		settle(k)
		pred, cached, replica, answer, err := chat(ctx, f.Balancers[0].URL, cfg.Model, msgs)
		if err != nil {
			t.Fatalf("request %d: %v", k, err)
		}
		if pred != cached {
			t.Errorf("request %d (group %d, conversation %d, turn %d) on %s: balancer predicted %d cached tokens, engine reports %d",
				k, g, c, len(msgs)/2, replica, pred, cached)
		}
		if cached > 0 {
			hits++
		}
		if len(msgs) > 2 && cached > 0 {
			beyondSystem++
		}
		replicas[replica]++
		history[key] = append(msgs, chatMessage{Role: "assistant", Content: answer})
	}
	settle(requests)
	// The traffic did exercise the cache: most requests hit, later turns
	// too, and the engines evicted as many blocks as the case needs.
	if hits < requests/2 || beyondSystem == 0 {
		t.Errorf("%d of %d requests hit, %d later turns hit; the workload did not exercise the cache", hits, requests, beyondSystem)
	}
	if evicted < minEvicted {
		t.Errorf("engines evicted %d blocks, want at least %d", evicted, minEvicted)
	}
	t.Logf("requests per replica: %v; %d of %d hit; %d blocks evicted", replicas, hits, requests, evicted)
}
