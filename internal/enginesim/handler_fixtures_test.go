package enginesim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

// literalKeys are compared by value; every other value only by type.
var literalKeys = map[string]bool{"object": true, "role": true, "finish_reason": true, "type": true,
	"param": true, "code": true, "owned_by": true, "model": true}

// jsonShape renders the structure of a JSON document: keys in order, value
// types, and the values of literalKeys. Arrays show each distinct
// consecutive element shape once, so lengths do not matter.
func jsonShape(b []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var sb strings.Builder
	if err := shapeValue(dec, &sb, ""); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("trailing data")
	}
	return sb.String(), nil
}

func shapeValue(dec *json.Decoder, sb *strings.Builder, key string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			sb.WriteString("{")
			first := true
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				if !first {
					sb.WriteString(",")
				}
				first = false
				k := kt.(string)
				sb.WriteString(k + ":")
				if err := shapeValue(dec, sb, k); err != nil {
					return err
				}
			}
			_, err := dec.Token()
			sb.WriteString("}")
			return err
		case '[':
			sb.WriteString("[")
			last := ""
			for dec.More() {
				var el strings.Builder
				if err := shapeValue(dec, &el, key); err != nil {
					return err
				}
				if el.String() != last {
					if last != "" {
						sb.WriteString(",")
					}
					sb.WriteString(el.String())
					last = el.String()
				}
			}
			_, err := dec.Token()
			sb.WriteString("]")
			return err
		}
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString("bool")
	case json.Number:
		if literalKeys[key] {
			sb.WriteString(v.String())
		} else {
			sb.WriteString("number")
		}
	case string:
		if literalKeys[key] {
			sb.WriteString(fmt.Sprintf("%q", v))
		} else {
			sb.WriteString("string")
		}
	}
	return nil
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func assertShape(t *testing.T, fixture string, want, got []byte) {
	t.Helper()
	ws, err := jsonShape(want)
	if err != nil {
		t.Fatalf("fixture %s: %v", fixture, err)
	}
	gs, err := jsonShape(got)
	if err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, got)
	}
	if diff := cmp.Diff(ws, gs); diff != "" {
		t.Errorf("shape differs from %s (-fixture +got):\n%s\ngot: %s", fixture, diff, got)
	}
}

func TestResponsesMatchFixtures(t *testing.T) {
	chat := func(extra string) string {
		return `{"model":"sim-model","messages":[{"role":"user","content":"tell me a story about a cat"}],"max_tokens":2,"ignore_eos":true` + extra + `}`
	}
	tests := []struct {
		name, method, path, body, fixture string
		details                           bool
		status                            int
	}{
		{"chat", "POST", "/v1/chat/completions", chat(""), "chat.json", false, 200},
		{"chat via alias", "POST", "/v1/chat/completions", strings.Replace(chat(""), `"sim-model"`, `"alias"`, 1), "chat.json", false, 200},
		{"chat stream", "POST", "/v1/chat/completions", chat(`,"stream":true`), "chat_plain.stream.json", false, 200},
		{"chat stream usage", "POST", "/v1/chat/completions", chat(`,"stream":true,"stream_options":{"include_usage":true}`), "chat_usage.stream.json", false, 200},
		{"chat stream continuous", "POST", "/v1/chat/completions", chat(`,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`), "chat_continuous.stream.json", false, 200},
		{"completion", "POST", "/v1/completions", `{"prompt":"once upon a time","max_tokens":1}`, "completion.json", false, 200},
		{"completion stream usage", "POST", "/v1/completions", `{"prompt":"once upon a time","max_tokens":2,"ignore_eos":true,"stream":true,"stream_options":{}}`, "completion_usage.stream.json", false, 200},
		{"models", "GET", "/v1/models", "", "models.json", false, 200},
		{"tokenize", "POST", "/tokenize", `{"prompt":"hello world"}`, "tokenize.json", false, 200},
		{"model not found", "POST", "/v1/chat/completions", `{"model":"nope","messages":[]}`, "error_model_not_found.json", false, 404},
		{"route not found", "GET", "/v1/nothing", "", "error_route_not_found.json", false, 404},
		{"method not allowed", "GET", "/v1/chat/completions", "", "error_method_not_allowed.json", false, 405},
		{"stream options without stream", "POST", "/v1/completions", `{"prompt":"x","stream_options":{"include_usage":true}}`, "error_stream_options.json", false, 400},
		{"context length", "POST", "/v1/completions", `{"prompt":"the prompt is eleven tokens long ok","max_tokens":5000}`, "error_context_length.json", false, 400},
		{"invalid json", "POST", "/v1/chat/completions", `{"messages":`, "error_invalid_json.json", false, 400},
	}
	for _, tt := range tests {
		// Inside a synctest bubble with modelled step times every token
		// arrives in its own step, so the number of chunks is exact.
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := simTestConfig()
				cfg.EnablePromptTokensDetails = tt.details
				cfg.Engine.ZeroLatency = false
				h := newSimHarness(t, cfg)
				defer h.close()
				rec := h.do(tt.method, tt.path, tt.body)
				if rec.Code != tt.status {
					t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.status, rec.Body)
				}
				want := readFixture(t, tt.fixture)
				if !strings.HasSuffix(tt.fixture, ".stream.json") {
					assertShape(t, tt.fixture, want, rec.Body.Bytes())
					return
				}
				if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
					t.Errorf("Content-Type = %q", ct)
				}
				var wantEvents []json.RawMessage
				mustJSON(t, want, &wantEvents)
				got := sseData(t, rec.Body.Bytes())
				if len(got) != len(wantEvents) {
					t.Fatalf("got %d events, want %d:\n%s", len(got), len(wantEvents), rec.Body)
				}
				for i, w := range wantEvents {
					if string(w) == `"[DONE]"` {
						if got[i] != "[DONE]" {
							t.Errorf("event %d = %s, want [DONE]", i, got[i])
						}
						continue
					}
					assertShape(t, fmt.Sprintf("%s[%d]", tt.fixture, i), w, []byte(got[i]))
				}
			})
		})
	}
}

// TestCachedTokensReported checks usage.prompt_tokens_details with
// --enable-prompt-tokens-details: null on a cold cache, the block-aligned
// hit on a repeat, and never without the flag.
func TestCachedTokensReported(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"` + strings.Repeat("a shared system prompt ", 20) + `"}],"max_tokens":1}`
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprint("enabled=", enabled), func(t *testing.T) {
			cfg := simTestConfig()
			cfg.EnablePromptTokensDetails = enabled
			h := newSimHarness(t, cfg)
			first := h.do("POST", "/v1/chat/completions", body)
			second := h.do("POST", "/v1/chat/completions", body)
			var r1, r2 struct {
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
					Details      *struct {
						CachedTokens int `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
				} `json:"usage"`
			}
			mustJSON(t, first.Body.Bytes(), &r1)
			mustJSON(t, second.Body.Bytes(), &r2)
			if r1.Usage.Details != nil {
				t.Errorf("cold request reported details %+v", *r1.Usage.Details)
			}
			if !enabled {
				if r2.Usage.Details != nil {
					t.Errorf("details reported without the flag")
				}
				return
			}
			if r2.Usage.Details == nil {
				t.Fatalf("warm request: no details: %s", second.Body)
			}
			bs := cfg.Engine.BlockSize
			want := (r2.Usage.PromptTokens - 1) / bs * bs
			if r2.Usage.Details.CachedTokens != want {
				t.Errorf("cached_tokens = %d, want %d (prompt %d)", r2.Usage.Details.CachedTokens, want, r2.Usage.PromptTokens)
			}
			assertShape(t, "chat_cached.json", readFixture(t, "chat_cached.json"), second.Body.Bytes())
		})
	}
}
