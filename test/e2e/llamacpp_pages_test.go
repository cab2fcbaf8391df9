package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// lcPagesDir holds the pages recorded from a real llama-server (make
// e2e-llamacpp with LLAMACPP_RECORD_DIR).
const lcPagesDir = "sidecar/engine/llamacpp/testdata"

// lcFakeServer answers as the recorded llama-server did: /metrics, /slots,
// /props and /v1/models from the recorded pages (the busy ones once busy is
// set), and a fixed completion for any model name, as llama-server does.
func lcFakeServer(t *testing.T, root string, busy *atomic.Bool) *httptest.Server {
	t.Helper()
	page := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(root, lcPagesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pages := map[string][]byte{}
	for _, n := range []string{"metrics-idle.txt", "metrics-busy.txt", "slots-idle.json", "slots-busy.json", "props.json", "models.json"} {
		pages[n] = page(n)
	}
	state := func(idle, busyPage string) []byte {
		if busy.Load() {
			return pages[busyPage]
		}
		return pages[idle]
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(state("metrics-idle.txt", "metrics-busy.txt"))
	})
	mux.HandleFunc("GET /slots", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(state("slots-idle.json", "slots-busy.json"))
	})
	mux.HandleFunc("GET /props", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pages["props.json"]) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pages["models.json"]) })
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"status":"ok"}`) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"text":"x","index":0,"finish_reason":"length"}],"model":"e2e-model","object":"text_completion",`+
			`"usage":{"completion_tokens":1,"prompt_tokens":40,"total_tokens":41,"prompt_tokens_details":{"cached_tokens":0}}}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// What metrics-busy.txt says: one request running; 3,657 prompt tokens
// computed and 3,641 reused from the cache.
const (
	lcBusyRunning      = 1
	lcBusyPromptTokens = 3657 + 3641
	lcBusyCachedTokens = 3641
)

// lcLoad is the part of the sidecar's /v1/load the test reads.
type lcLoad struct {
	Readable bool `json:"readable"`
	Engine   struct {
		Kind              string
		Running, Waiting  float64
		KVUsage           float64
		PromptTokensTotal float64
		PrefixHits        float64
		NumGPUBlocks      int
	} `json:"engine"`
}

// TestSidecarReadsRecordedLlamaCpp runs the real sidecar with --engine auto
// in front of a server that answers with the pages recorded from a real
// llama-server: it detects llama.cpp, sizes its block set from /props and
// /slots (2 slots of 8,192 tokens: 2 x 16,384 tokens in 16-token blocks),
// reads the busy page's load and usage, and keeps the approximate block set
// from the prompts of its data path.
func TestSidecarReadsRecordedLlamaCpp(t *testing.T) {
	root := scRepoRoot(t)
	var busy atomic.Bool
	engine := lcFakeServer(t, root, &busy)
	bin := scBuild(t)
	data, admin, gossip := scFreePort(t), scFreePort(t), scFreePort(t)
	sc := &scSidecar{data: fmt.Sprintf("http://127.0.0.1:%d", data), admin: fmt.Sprintf("http://127.0.0.1:%d", admin)}
	sc.proc = scStart(t, bin, "sidecar", "sidecar", "--engine-url", engine.URL, "--engine", "auto",
		"--tokenizer", "builtin:sim", "--listen", fmt.Sprintf("127.0.0.1:%d", data), "--admin", fmt.Sprintf("127.0.0.1:%d", admin),
		"--gossip-bind", fmt.Sprintf("127.0.0.1:%d", gossip), "--gossip-profile", "local", "--node-name", "lc-pages", "--log-level", "debug")

	const blocks = 2 * 2 * 8192 / 16
	load := func(want func(lcLoad) error) {
		t.Helper()
		scWait(t, "the sidecar's load", func() error {
			var l lcLoad
			if err := scGetJSON(sc.admin+"/v1/load", &l); err != nil {
				return err
			}
			if !l.Readable || l.Engine.Kind != "llamacpp" || l.Engine.NumGPUBlocks != blocks {
				return fmt.Errorf("load %+v, want readable llamacpp with %d blocks", l, blocks)
			}
			return want(l)
		})
	}
	load(func(l lcLoad) error {
		if l.Engine.Running != 0 || l.Engine.KVUsage != 0 {
			return fmt.Errorf("idle page: running %v, usage %v", l.Engine.Running, l.Engine.KVUsage)
		}
		return nil
	})
	busy.Store(true)
	load(func(l lcLoad) error {
		if l.Engine.Running != lcBusyRunning || l.Engine.KVUsage <= 0 || l.Engine.KVUsage > 1 {
			return fmt.Errorf("busy page: running %v, usage %v; want %v running and a usage in (0,1]", l.Engine.Running, l.Engine.KVUsage, lcBusyRunning)
		}
		if l.Engine.PromptTokensTotal != lcBusyPromptTokens || l.Engine.PrefixHits != lcBusyCachedTokens {
			return fmt.Errorf("busy page: prompt tokens %v, cached %v; want %v and %v",
				l.Engine.PromptTokensTotal, l.Engine.PrefixHits, lcBusyPromptTokens, lcBusyCachedTokens)
		}
		return nil
	})
	if got := scMetric(t, sc, "inferrail_sidecar_engine_capacity_blocks", ""); got != blocks {
		t.Errorf("engine_capacity_blocks = %v, want %d", got, blocks)
	}

	// A prompt through the data path lands in the approximate block set.
	prompt := strings.Repeat("a prompt long enough for a few blocks of sixteen tokens. ", 8)
	resp, err := http.Post(sc.data+"/v1/completions", "application/json",
		strings.NewReader(fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":1}`, prompt)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion through the sidecar: %s %s", resp.Status, b)
	}
	scWait(t, "the approximate set to hold the prompt", func() error {
		var got scBlocks
		if err := scGetJSON(sc.admin+"/debug/blocks", &got); err != nil {
			return err
		}
		if got.Source != "approx" || len(got.Blocks["GPU"]) == 0 {
			return fmt.Errorf("blocks from %q: %d", got.Source, len(got.Blocks["GPU"]))
		}
		return nil
	})
}
