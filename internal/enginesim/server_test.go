package enginesim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

func TestRequestIDs(t *testing.T) {
	tests := []struct {
		name, path, body, header string
		headersOn                bool
		wantID, wantHeader       string
	}{
		{"header wins", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":1,"request_id":"body"}`, "hdr", false, "chatcmpl-hdr", ""},
		{"body request_id", "/v1/completions", `{"prompt":"x","max_tokens":1,"request_id":"body"}`, "", false, "cmpl-body", ""},
		{"echoed header", "/v1/completions", `{"prompt":"x","max_tokens":1}`, "abc", true, "cmpl-abc", "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simTestConfig()
			cfg.EnableRequestIDHeaders = tt.headersOn
			h := newSimHarness(t, cfg)
			var hdr []string
			if tt.header != "" {
				hdr = []string{"X-Request-Id", tt.header}
			}
			rec := h.do("POST", tt.path, tt.body, hdr...)
			var r struct {
				ID string `json:"id"`
			}
			mustJSON(t, rec.Body.Bytes(), &r)
			if r.ID != tt.wantID {
				t.Errorf("id = %q, want %q", r.ID, tt.wantID)
			}
			if got := rec.Header().Get("X-Request-Id"); got != tt.wantHeader {
				t.Errorf("X-Request-Id header = %q, want %q", got, tt.wantHeader)
			}
		})
	}
	// Without any id: a random 32-hex id, and with headers on a fresh header.
	cfg := simTestConfig()
	cfg.EnableRequestIDHeaders = true
	h := newSimHarness(t, cfg)
	rec := h.do("POST", "/v1/completions", `{"prompt":"x","max_tokens":1}`)
	var r struct {
		ID string `json:"id"`
	}
	mustJSON(t, rec.Body.Bytes(), &r)
	if len(r.ID) != len("cmpl-")+32 || len(rec.Header().Get("X-Request-Id")) != 32 {
		t.Errorf("random ids: body %q header %q", r.ID, rec.Header().Get("X-Request-Id"))
	}
}

// TestKVCacheDebugMatchesPrompt: the debug route lists the router hashes of
// the prompt's full blocks, chained from the model's seed and cache salt.
func TestKVCacheDebugMatchesPrompt(t *testing.T) {
	h := newSimHarness(t, simTestConfig())
	prompt := strings.Repeat("the quick brown fox ", 12)
	if rec := h.do("POST", "/v1/completions", `{"prompt":"`+prompt+`","max_tokens":1,"cache_salt":"s1"}`); rec.Code != 200 {
		t.Fatalf("completion: %d %s", rec.Code, rec.Body)
	}
	var got struct {
		Ranks []struct {
			BlockSize int            `json:"block_size"`
			Hashes    []kvblock.Hash `json:"hashes"`
		} `json:"ranks"`
	}
	mustJSON(t, h.do("GET", "/inferrail/debug/kv_cache", "").Body.Bytes(), &got)
	ids := simtok.Encode(prompt, true)
	want := kvblock.Hashes(nil, kvblock.NewSeed("sim-model", "", "s1"), ids, 16)
	have := map[kvblock.Hash]bool{}
	for _, x := range got.Ranks[0].Hashes {
		have[x] = true
	}
	for i, x := range want {
		if !have[x] {
			t.Errorf("block %d of the prompt (hash %d) not in the cache listing", i, x)
		}
	}
	// A restart empties it.
	if rec := h.do("POST", "/inferrail/debug/restart", ""); rec.Code != 200 {
		t.Fatalf("restart: %d", rec.Code)
	}
	mustJSON(t, h.do("GET", "/inferrail/debug/kv_cache", "").Body.Bytes(), &got)
	if len(got.Ranks[0].Hashes) != 0 {
		t.Errorf("after restart: %d cached blocks, want 0", len(got.Ranks[0].Hashes))
	}
}

func TestTokenizeDetokenize(t *testing.T) {
	h := newSimHarness(t, simTestConfig())
	var tok struct {
		Count  int      `json:"count"`
		Tokens []uint32 `json:"tokens"`
	}
	mustJSON(t, h.do("POST", "/tokenize", `{"prompt":"hello world"}`).Body.Bytes(), &tok)
	if diff := cmp.Diff(simtok.Encode("hello world", true), tok.Tokens); diff != "" || tok.Count != len(tok.Tokens) {
		t.Errorf("tokenize (-want +got):\n%s", diff)
	}
	var chat struct {
		Tokens []uint32 `json:"tokens"`
	}
	mustJSON(t, h.do("POST", "/tokenize", `{"messages":[{"role":"user","content":"hi"}]}`).Body.Bytes(), &chat)
	want := simtok.Encode(simtok.RenderChat([]simtok.Message{{Role: "user", Content: "hi"}}, true, false), false)
	if diff := cmp.Diff(want, chat.Tokens); diff != "" {
		t.Errorf("chat tokenize (-want +got):\n%s", diff)
	}
	var de struct {
		Prompt string `json:"prompt"`
	}
	mustJSON(t, h.do("POST", "/detokenize", `{"tokens":[17,18]}`).Body.Bytes(), &de)
	if want, _ := simtok.Decode([]uint32{17, 18}, false); de.Prompt != want {
		t.Errorf("detokenize = %q, want %q", de.Prompt, want)
	}
}

func TestHealthVersionMetricsReset(t *testing.T) {
	h := newSimHarness(t, simTestConfig())
	if rec := h.do("GET", "/health", ""); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("health: %d %q", rec.Code, rec.Body)
	}
	if rec := h.do("GET", "/version", ""); !strings.Contains(rec.Body.String(), `"version":"`+DefaultVersion+`"`) {
		t.Errorf("version: %s", rec.Body)
	}
	h.do("POST", "/v1/completions", `{"prompt":"count me","max_tokens":2,"ignore_eos":true}`)
	rec := h.do("GET", "/metrics", "")
	for _, want := range []string{`vllm:request_success_total{engine="0",finished_reason="length",model_name="sim-model"} 1`, "vllm:num_requests_running"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics page lacks %q", want)
		}
	}
	if rec := h.do("POST", "/reset_prefix_cache", ""); rec.Code != 200 {
		t.Errorf("reset_prefix_cache: %d", rec.Code)
	}
	if n := len(h.engines[0].CachedBlocks()); n != 0 {
		t.Errorf("%d blocks cached after reset", n)
	}
}

// TestDataParallelLeastLoaded: with two ranks, a request goes to the rank
// with fewer requests in flight.
func TestDataParallelLeastLoaded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := simTestConfig()
		cfg.DataParallelSize = 2
		cfg.Engine.ZeroLatency = false
		h := newSimHarness(t, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		long := httptest.NewRequest("POST", "/v1/chat/completions",
			strings.NewReader(`{"messages":[{"role":"user","content":"long"}],"max_tokens":2000,"ignore_eos":true,"stream":true}`)).WithContext(ctx)
		w := newChunkRecorder(2)
		done := make(chan struct{})
		go func() {
			h.fe.ServeHTTP(w, long)
			close(done)
		}()
		<-w.seen
		for i := 0; i < 3; i++ {
			if rec := h.do("POST", "/v1/completions", `{"prompt":"short","max_tokens":1}`); rec.Code != 200 {
				t.Fatalf("short: %d %s", rec.Code, rec.Body)
			}
		}
		if got := counterValue(t, h.reg, "vllm:request_success_total", map[string]string{"engine": "1", "finished_reason": "length"}); got != 3 {
			t.Errorf("rank 1 served %v short requests, want 3 (rank 0 is busy)", got)
		}
		cancel()
		<-done
		h.close()
	})
}

func TestHTTPMethodsAndPaths(t *testing.T) {
	h := newSimHarness(t, simTestConfig())
	tests := []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/completions", http.StatusMethodNotAllowed},
		{"DELETE", "/v1/models", http.StatusMethodNotAllowed},
		{"HEAD", "/health", http.StatusOK},
		{"GET", "/nope", http.StatusNotFound},
		{"POST", "/v1/models/x", http.StatusNotFound},
	}
	for _, tt := range tests {
		if rec := h.do(tt.method, tt.path, ""); rec.Code != tt.status {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.path, rec.Code, tt.status)
		}
	}
}
