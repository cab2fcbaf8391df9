package enginesim

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// fuzzHandler feeds body through the front end and fails on a panic (the
// handler would crash the test) or a 5xx.
func fuzzHandler(f *testing.F, path string, seeds []string) {
	cfg := simTestConfig()
	cfg.Engine.MaxModelLen = 512
	h := newSimHarness(f, cfg)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", path, strings.NewReader(string(body)))
		rec := httptest.NewRecorder()
		h.fe.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}

func FuzzChatCompletions(f *testing.F) {
	fuzzHandler(f, "/v1/chat/completions", []string{
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"max_tokens":2}`,
		`{"messages":[{"role":"system","content":null},{"role":"user","content":"x"}],"stop":["a","b "],"min_tokens":3,"max_completion_tokens":9}`,
		`{"messages":[],"n":2}`, `{"model":"alias","messages":[{"role":"assistant","content":"x"}],"add_generation_prompt":false,"continue_final_message":true,"max_tokens":1}`,
		`[]`, `{`, `null`, `{"messages":[{"role":"user","content":"hi"}],"stop_token_ids":[40],"ignore_eos":true,"max_tokens":20}`,
	})
}

func FuzzCompletions(f *testing.F) {
	fuzzHandler(f, "/v1/completions", []string{
		`{"prompt":"hello","max_tokens":3}`,
		`{"prompt":[1,17,18],"stream":true,"stream_options":{}}`,
		`{"prompt":[[1,2]],"max_tokens":1,"return_token_ids":true}`,
		`{"prompt":["a"],"stop":"a","include_stop_str_in_output":true}`,
		`{"prompt":"x","max_tokens":100000}`, `{"prompt":""}`, `{"prompt":[]}`,
	})
}
