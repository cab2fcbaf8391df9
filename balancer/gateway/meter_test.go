package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// meterOf writes the response in parts through a fresh meter.
func meterOf(status int, contentType string, parts ...string) (*Meter, *httptest.ResponseRecorder) {
	rec := httptest.NewRecorder()
	a := &Admission{g: &Gate{m: NewMetrics(nil)}, limited: true}
	m := a.Meter(rec)
	m.Header().Set("Content-Type", contentType)
	m.WriteHeader(status)
	for _, p := range parts {
		_, _ = m.Write([]byte(p))
	}
	return m, rec
}

func TestMeterCompletion(t *testing.T) {
	const sse = "text/event-stream"
	chunk := func(s string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"` + s + `"}}]}` + "\n\n"
	}
	tests := []struct {
		name        string
		status      int
		contentType string
		parts       []string
		want        int64
	}{
		{"body usage", 200, "application/json", []string{`{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`}, 7},
		{"body split across writes", 200, "application/json", []string{`{"usage":{"completion`, `_tokens":12}}`}, 12},
		{"body without usage: text/4", 200, "application/json", []string{`{"choices":[{"text":"abcdefgh"}]}`}, 2},
		{"embeddings have no completion", 200, "application/json", []string{`{"data":[],"usage":{"prompt_tokens":3,"total_tokens":3}}`}, 0},
		{"stream with usage", 200, sse, []string{chunk("a"), chunk("b"), `data: {"choices":[],"usage":{"completion_tokens":9}}` + "\n\n", "data: [DONE]\n\n"}, 9},
		{"stream without usage counts chunks", 200, sse, []string{chunk("a"), chunk("b"), chunk("c"), "data: [DONE]\n\n"}, 3},
		{"stream lines split across writes", 200, sse, []string{`data: {"choices":[{"te`, `xt":"x"}]}` + "\r\n\r\n" + chunk("y")[:10], chunk("y")[10:]}, 2},
		{"empty deltas do not count", 200, sse, []string{`data: {"choices":[{"delta":{"role":"assistant"}}]}` + "\n\n", chunk("a")}, 1},
		{"tool calls count", 200, sse, []string{`data: {"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}` + "\n\n"}, 1},
		{"two choices per chunk", 200, sse, []string{`data: {"choices":[{"text":"a"},{"text":"b"}]}` + "\n\n"}, 2},
		{"error responses count nothing", 429, "application/json", []string{`{"usage":{"completion_tokens":7}}`}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, rec := meterOf(tc.status, tc.contentType, tc.parts...)
			if got := m.Completion(); got != tc.want {
				t.Errorf("Completion() = %d, want %d", got, tc.want)
			}
			if got, want := rec.Body.String(), strings.Join(tc.parts, ""); got != want {
				t.Errorf("body changed on its way: %q, want %q", got, want)
			}
		})
	}
}

func TestMeterWritesLimitHeadersOverUpstreams(t *testing.T) {
	rec := httptest.NewRecorder()
	q := Quota{Requests: Bucket{Rate: 1, Burst: 10}, Tokens: Bucket{Rate: 100, Burst: 6000}}
	a := &Admission{g: &Gate{m: NewMetrics(nil)}, id: Identity{quota: q}, limited: true, levels: Levels{Requests: 9, Tokens: 5900}}
	m := a.Meter(rec)
	m.Header().Set(HeaderRemainingRequests, "999") // a provider's own header
	m.WriteHeader(http.StatusOK)
	want := map[string]string{
		HeaderLimitRequests: "10", HeaderRemainingRequests: "9", HeaderResetRequests: "1s",
		HeaderLimitTokens: "6000", HeaderRemainingTokens: "5900", HeaderResetTokens: "1s",
	}
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if _, ok := any(m).(interface{ Unwrap() http.ResponseWriter }); !ok {
		t.Error("Meter does not unwrap (ResponseController could not flush)")
	}
}

func FuzzMeter(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n"), true)
	f.Add([]byte(`{"usage":{"completion_tokens":3}}`), false)
	f.Add([]byte("data: {\"usage\":{\"completion_tokens\":-1}}\n"), true)
	f.Fuzz(func(t *testing.T, b []byte, sse bool) {
		ct := "application/json"
		if sse {
			ct = "text/event-stream"
		}
		half := len(b) / 2
		m, rec := meterOf(200, ct, string(b[:half]), string(b[half:]))
		_ = m.Completion()
		if rec.Body.Len() != len(b) {
			t.Fatalf("wrote %d bytes of %d", rec.Body.Len(), len(b))
		}
	})
}

func TestMeterIsPassiveWithoutKeysOrLimits(t *testing.T) {
	rec := httptest.NewRecorder()
	m := (&Admission{g: &Gate{m: NewMetrics(nil)}}).Meter(rec)
	_, _ = m.Write([]byte(`{"usage":{"completion_tokens":7}}`))
	if got := m.Completion(); got != 0 || len(m.body) != 0 {
		t.Errorf("a passive meter counted %d and kept %d bytes", got, len(m.body))
	}
}
