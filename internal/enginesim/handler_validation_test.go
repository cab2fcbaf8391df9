package enginesim

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/openai"
)

// TestUnsupportedParameters: every parameter the simulator cannot honour is
// a 400 naming it, never a silently different answer.
func TestUnsupportedParameters(t *testing.T) {
	h := newSimHarness(t, simTestConfig())
	chat := func(extra string) string {
		return `{"messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	comp := func(extra string) string { return `{"prompt":"hi"` + extra + `}` }
	tests := []struct {
		name, path, body, param string
	}{
		{"n", "/v1/chat/completions", chat(`,"n":2`), "n"},
		{"best_of", "/v1/completions", comp(`,"best_of":3`), "best_of"},
		{"chat logprobs", "/v1/chat/completions", chat(`,"logprobs":true`), "logprobs"},
		{"top_logprobs", "/v1/chat/completions", chat(`,"top_logprobs":2`), "top_logprobs"},
		{"completion logprobs", "/v1/completions", comp(`,"logprobs":1`), "logprobs"},
		{"echo", "/v1/completions", comp(`,"echo":true`), "echo"},
		{"chat echo", "/v1/chat/completions", chat(`,"echo":true`), "echo"},
		{"prompt_logprobs", "/v1/completions", comp(`,"prompt_logprobs":1`), "prompt_logprobs"},
		{"use_beam_search", "/v1/chat/completions", chat(`,"use_beam_search":true`), "use_beam_search"},
		{"json_schema", "/v1/chat/completions", chat(`,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`), "response_format"},
		{"json_object", "/v1/completions", comp(`,"response_format":{"type":"json_object"}`), "response_format"},
		{"structured_outputs", "/v1/chat/completions", chat(`,"structured_outputs":{"regex":"a+"}`), "structured_outputs"},
		{"guided_json", "/v1/completions", comp(`,"guided_json":{"type":"object"}`), "guided_json"},
		{"logit_bias", "/v1/chat/completions", chat(`,"logit_bias":{"5":1}`), "logit_bias"},
		{"suffix", "/v1/completions", comp(`,"suffix":"end"`), "suffix"},
		{"several prompts", "/v1/completions", `{"prompt":["a","b"]}`, "prompt"},
		{"tools auto", "/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"f"}}]`), "tool_choice"},
		{"tools required", "/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"`), "tool_choice"},
		{"request chat template", "/v1/chat/completions", chat(`,"chat_template":"{{x}}"`), "chat_template"},
		{"image content", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "messages"},
		{"priority", "/v1/chat/completions", chat(`,"priority":1`), "priority"},
		{"stream_options without stream", "/v1/chat/completions", chat(`,"stream_options":{"include_usage":true}`), "stream_options"},
		{"stream_options with stream false", "/v1/completions", comp(`,"stream":false,"stream_options":{"continuous_usage_stats":true}`), "stream_options"},
		{"max_tokens zero", "/v1/chat/completions", chat(`,"max_tokens":0`), "max_tokens"},
		{"max_completion_tokens negative", "/v1/chat/completions", chat(`,"max_completion_tokens":-1`), "max_completion_tokens"},
		{"min over max", "/v1/completions", comp(`,"min_tokens":20,"max_tokens":10`), "min_tokens"},
		{"too long", "/v1/completions", comp(`,"max_tokens":4096`), "input_tokens"},
		{"token id out of vocabulary", "/v1/completions", `{"prompt":[1,4294967295]}`, "prompt"},
		{"wrong type", "/v1/chat/completions", chat(`,"max_tokens":"many"`), "body.max_tokens"},
		{"empty salt", "/v1/chat/completions", chat(`,"cache_salt":""`), "body.cache_salt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do("POST", tt.path, tt.body)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400; body %s", rec.Code, rec.Body)
			}
			e, ok := openai.ParseError(rec.Body.Bytes())
			if !ok {
				t.Fatalf("not an error body: %s", rec.Body)
			}
			if e.Param != tt.param {
				t.Errorf("param = %q, want %q (message %q)", e.Param, tt.param, e.Message)
			}
		})
	}
}

// TestAcceptedParameters: parameters that do not change a simulated answer
// are accepted, unknown fields included (vLLM ignores them).
func TestAcceptedParameters(t *testing.T) {
	h := newSimHarness(t, simTestConfig())
	for _, extra := range []string{
		`"n":1`, `"best_of":1`, `"temperature":0.7,"top_p":0.9,"top_k":5,"seed":1`, `"logprobs":false`,
		`"stream_options":{}`, `"response_format":{"type":"text"}`, `"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"`,
		`"some_future_field":{"x":[1,2]}`, `"user":"u","presence_penalty":0.1`, `"stop":null,"stop_token_ids":null`,
	} {
		rec := h.do("POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,`+extra+`}`)
		if rec.Code != http.StatusOK {
			t.Errorf("%s: status %d: %s", extra, rec.Code, rec.Body)
		}
	}
}

func TestOutputLengthRules(t *testing.T) {
	h := newSimHarness(t, simTestConfig())
	type result struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
			StopReason   any    `json:"stop_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	get := func(body string) result {
		t.Helper()
		rec := h.do("POST", "/v1/completions", body)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
		var r result
		mustJSON(t, rec.Body.Bytes(), &r)
		return r
	}
	// Natural end: EOS at a length in [16, 400], finish "stop", no stop_reason.
	natural := get(`{"prompt":"a natural ending","max_tokens":1000}`)
	n := natural.Usage.CompletionTokens
	if natural.Choices[0].FinishReason != "stop" || n < minNaturalTokens || n > maxNaturalTokens+1 || natural.Choices[0].StopReason != nil {
		t.Fatalf("natural end: %+v", natural)
	}
	// Deterministic: the same prompt gives the same text.
	if again := get(`{"prompt":"a natural ending","max_tokens":1000}`); again.Choices[0].Text != natural.Choices[0].Text {
		t.Errorf("same prompt, different text: %q vs %q", again.Choices[0].Text, natural.Choices[0].Text)
	}
	// ignore_eos runs to max_tokens.
	if r := get(`{"prompt":"a natural ending","max_tokens":` + fmt.Sprint(n+20) + `,"ignore_eos":true}`); r.Usage.CompletionTokens != n+20 || r.Choices[0].FinishReason != "length" {
		t.Errorf("ignore_eos: %+v", r)
	}
	// min_tokens past the natural end keeps generating.
	if r := get(`{"prompt":"a natural ending","max_tokens":1000,"min_tokens":` + fmt.Sprint(n+10) + `}`); r.Usage.CompletionTokens < n+10 {
		t.Errorf("min_tokens: %d tokens, want >= %d", r.Usage.CompletionTokens, n+10)
	}
	// A stop string cuts the text before it and names it.
	words := strings.Fields(natural.Choices[0].Text)
	stop := words[3] + " " + words[4]
	r := get(`{"prompt":"a natural ending","max_tokens":1000,"stop":["` + stop + `"]}`)
	if r.Choices[0].FinishReason != "stop" || r.Choices[0].StopReason != stop || strings.Contains(r.Choices[0].Text, stop) ||
		!strings.HasPrefix(natural.Choices[0].Text, r.Choices[0].Text) {
		t.Errorf("stop string %q: %+v (full %q)", stop, r, natural.Choices[0].Text)
	}
	// include_stop_str_in_output keeps it.
	r = get(`{"prompt":"a natural ending","max_tokens":1000,"stop":["` + stop + `"],"include_stop_str_in_output":true}`)
	if !strings.HasSuffix(r.Choices[0].Text, stop) {
		t.Errorf("include_stop_str_in_output: %q", r.Choices[0].Text)
	}
}
