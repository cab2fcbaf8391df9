package devfleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
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

// converged reports nil once, for every replica, the balancer's view of its
// summary is at the sidecar's version and holds as many blocks as the
// sidecar's exact set, which holds as many as the engine's prefix cache: the
// state is then exchanged all the way and what remains is the exact-state
// fleet's residual delay, not missing state.
func converged(ctx context.Context, f *devfleet.Fleet) error {
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
		engine := 0
		for _, rk := range kv.Ranks {
			engine += len(rk.Hashes)
		}
		var sc sidecarSummary
		if err := getJSON(ctx, r.SidecarAdmin+"/v1/summary", &sc); err != nil {
			return err
		}
		if sc.Blocks["gpu"] != engine {
			return fmt.Errorf("%s: sidecar holds %d blocks, engine %d", r.Name, sc.Blocks["gpu"], engine)
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
			if engine == 0 {
				break // an empty cache: any version of the summary says so
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

// waitConverged polls converged until it holds or ctx ends.
func waitConverged(ctx context.Context, f *devfleet.Fleet) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		err := converged(ctx, f)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("state never converged: %w", err)
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
// every later turn's prefix.
func TestExactStateFleetPredictsEngineCache(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	defer cancel()
	cfg := devfleet.DefaultConfig()
	cfg.Binary, cfg.Replicas, cfg.Balancers, cfg.Port = bin, 2, 1, 0
	cfg.ZeroLatency, cfg.CacheBlocks = true, 8000 // no evictions: removals lag until a rebuild
	cfg.ExactState = true
	cfg.LogDir = t.TempDir()
	f, err := devfleet.Start(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()

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
	for k := range requests {
		g, c := rnd.IntN(groups), rnd.IntN(convs)
		key := [2]int{g, c}
		msgs := history[key]
		if msgs == nil {
			msgs = []chatMessage{{Role: "system", Content: systems[g]}}
		}
		msgs = append(msgs, chatMessage{Role: "user", Content: fmt.Sprintf("turn %d of request %d: q%d q%d", len(msgs), k, rnd.IntN(1000), rnd.IntN(1000))})
		if err := waitConverged(ctx, f); err != nil {
			t.Fatalf("before request %d: %v", k, err)
		}
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
	// The traffic did exercise the cache: most requests hit, and later
	// turns too.
	if hits < requests/2 || beyondSystem == 0 {
		t.Errorf("%d of %d requests hit, %d later turns hit; the workload did not exercise the cache", hits, requests, beyondSystem)
	}
	t.Logf("requests per replica: %v; %d of %d hit", replicas, hits, requests)
}
