package openai

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseChatCompletionRequest(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
	"stream":true,"stream_options":{},"max_tokens":5,"max_completion_tokens":7,"min_tokens":2,"ignore_eos":true,
	"stop":"x","stop_token_ids":[3,4],"n":1,"cache_salt":"salt","request_id":"r1","unknown_field":{"k":[1]},"tools":[{"type":"function"}]}`
	r, e := ParseChatCompletionRequest([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	seven := 7
	one := 1
	want := Params{Model: "m", Stream: true, StreamOptions: &StreamOptions{IncludeUsage: true}, MaxTokens: &seven,
		MaxTokensParam: "max_completion_tokens", MinTokens: 2, IgnoreEOS: true, Stop: []string{"x"}, StopTokenIDs: []uint32{3, 4},
		N: &one, CacheSalt: "salt", RequestID: "r1", SkipSpecialTokens: true}
	if diff := cmp.Diff(want, r.Params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	if got := []string{r.Messages[0].Content, r.Messages[1].Content}; !cmp.Equal(got, []string{"s", "a\nb"}) {
		t.Errorf("contents = %q", got)
	}
	if _, ok := r.Raw["unknown_field"]; !ok {
		t.Error("unknown field not kept")
	}
	if !r.AddGenerationPrompt || r.AddSpecialTokens || len(r.Tools) != 1 {
		t.Errorf("chat defaults wrong: %+v", r)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, body, param string
		chat              bool
	}{
		{"not json", `{`, "body", true},
		{"not object", `[1]`, "body", true},
		{"null body", `null`, "body", true},
		{"missing messages", `{"model":"m"}`, "body.messages", true},
		{"messages not list", `{"messages":"x"}`, "body.messages", true},
		{"bad max_tokens", `{"messages":[],"max_tokens":"5"}`, "body.max_tokens", true},
		{"fractional max_tokens", `{"messages":[],"max_tokens":1.5}`, "body.max_tokens", true},
		{"bad stream", `{"messages":[],"stream":"yes"}`, "body.stream", true},
		{"bad stop", `{"messages":[],"stop":[1]}`, "body.stop", true},
		{"bad stop ids", `{"messages":[],"stop_token_ids":[-1]}`, "body.stop_token_ids", true},
		{"message without role", `{"messages":[{"content":"x"}]}`, "body.messages.0", true},
		{"empty salt", `{"messages":[],"cache_salt":""}`, "body.cache_salt", true},
		{"bad stream options", `{"messages":[],"stream_options":{"include_usage":3}}`, "body.stream_options.include_usage", true},
		{"missing prompt", `{"model":"m"}`, "prompt", false},
		{"empty prompt", `{"prompt":""}`, "prompt", false},
		{"bad prompt", `{"prompt":[1,"a"]}`, "body.prompt", false},
		{"bad logprobs", `{"prompt":"a","logprobs":"x"}`, "body.logprobs", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *Error
			if tt.chat {
				_, e = ParseChatCompletionRequest([]byte(tt.body))
			} else {
				_, e = ParseCompletionRequest([]byte(tt.body))
			}
			if e == nil {
				t.Fatal("no error")
			}
			if e.Status != http.StatusBadRequest || e.Param != tt.param {
				t.Errorf("error = %+v, want 400 naming %q", e, tt.param)
			}
		})
	}
}

func TestParseCompletionPrompts(t *testing.T) {
	tests := []struct {
		body string
		kind PromptKind
		n    int
	}{
		{`{"prompt":"hi"}`, PromptText, 1},
		{`{"prompt":["a","b"]}`, PromptTexts, 2},
		{`{"prompt":[1,2,3]}`, PromptTokens, 1},
		{`{"prompt":[[1],[2,3]]}`, PromptTokenLists, 2},
	}
	for _, tt := range tests {
		r, e := ParseCompletionRequest([]byte(tt.body))
		if e != nil {
			t.Fatalf("%s: %v", tt.body, e)
		}
		if r.PromptKind != tt.kind || r.NumPrompts() != tt.n {
			t.Errorf("%s: kind %v n %d", tt.body, r.PromptKind, r.NumPrompts())
		}
		if r.MaxTokens == nil || *r.MaxTokens != 16 {
			t.Errorf("%s: completions max_tokens default = %v, want 16", tt.body, r.MaxTokens)
		}
	}
}

func TestErrorShapes(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"not found model", ModelNotFound("x"), `{"error":{"message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":"model","code":404}}`},
		{"route", RouteNotFound(), `{"error":{"message":"Not Found","type":"Not Found","param":null,"code":404}}`},
		{"method", MethodNotAllowed(), `{"error":{"message":"Method Not Allowed","type":"Method Not Allowed","param":null,"code":405}}`},
		{"bad request", BadRequest("n", "n must be 1"), `{"error":{"message":"n must be 1","type":"BadRequestError","param":"n","code":400}}`},
		{"422", Unprocessable("", "x"), `{"error":{"message":"x","type":"UnprocessableEntityError","param":null,"code":422}}`},
		{"500", Internal("boom"), `{"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}}`},
		{"501", NotImplemented("no"), `{"error":{"message":"no","type":"NotImplementedError","param":null,"code":501}}`},
		{"503", Unavailable("down"), `{"error":{"message":"down","type":"Service Unavailable","param":null,"code":503}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tt.err.Write(rec)
			if rec.Code != tt.err.Status {
				t.Errorf("status = %d", rec.Code)
			}
			if got := rec.Body.String(); got != tt.want {
				t.Errorf("body = %s\nwant   %s", got, tt.want)
			}
			back, ok := ParseError(rec.Body.Bytes())
			if !ok || *back != *tt.err {
				t.Errorf("ParseError = %+v, %v", back, ok)
			}
		})
	}
	rec := httptest.NewRecorder()
	BadRequest("", "x").WriteLegacy(rec)
	if got := rec.Body.String(); got != `{"object":"error","message":"x","type":"BadRequestError","param":null,"code":400}` {
		t.Errorf("legacy body = %s", got)
	}
	if back, ok := ParseError(rec.Body.Bytes()); !ok || back.Status != 400 {
		t.Errorf("ParseError(legacy) = %+v, %v", back, ok)
	}
}

func TestOptionalAndChunkShapes(t *testing.T) {
	stop := "stop"
	c := ChatCompletionChunk{ID: "chatcmpl-1", Object: ObjectChatCompletionChunk, Created: 1, Model: "m",
		Choices: []ChatChunkChoice{{Index: 0, Delta: ChatDelta{Content: Some("x")}, FinishReason: &stop,
			StopReason: Some(StopReason{}), TokenIDs: Null[[]uint32]()}}}
	b, _ := json.Marshal(c)
	want := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}]}`
	if string(b) != want {
		t.Errorf("chunk = %s\nwant    %s", b, want)
	}
	var back ChatCompletionChunk
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Choices[0].TokenIDs.IsNull() || back.Usage.IsZero() == false {
		t.Errorf("decoded optionals wrong: %+v", back.Choices[0])
	}
}

func FuzzParseRequests(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`))
	f.Add([]byte(`{"prompt":[[1,2],[3]],"stop":["a"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, e := ParseChatCompletionRequest(b); e != nil && e.Status != 400 {
			t.Fatalf("chat: status %d", e.Status)
		}
		if _, e := ParseCompletionRequest(b); e != nil && e.Status != 400 {
			t.Fatalf("completions: status %d", e.Status)
		}
		_, _ = ParseTokenizeRequest(b)
		_, _ = ParseDetokenizeRequest(b)
	})
}

func FuzzParseError(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"m","type":"t","param":null,"code":400}}`))
	f.Add([]byte(`{"object":"error","message":"m","type":"t","param":"p","code":404}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := ParseError(b)
		if ok && (e == nil || e.Status == 0) {
			t.Fatalf("ParseError reported ok with %+v", e)
		}
	})
}
