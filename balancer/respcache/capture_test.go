package respcache

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCaptureStoresOnlyCompleteAnswers(t *testing.T) {
	tests := []struct {
		name   string
		status int
		ctype  string
		body   string
		max    int64
		want   bool
	}{
		{"complete stream", 200, "text/event-stream", "data: {\"a\":1}\n\ndata: [DONE]\n\n", 1 << 20, true},
		{"stream cut before done", 200, "text/event-stream", "data: {\"a\":1}\n\n", 1 << 20, false},
		{"done without the blank line", 200, "text/event-stream", "data: {}\n\ndata: [DONE]", 1 << 20, false},
		{"complete json", 200, "application/json", `{"choices":[]}`, 1 << 20, true},
		{"cut json", 200, "application/json", `{"choices":[`, 1 << 20, false},
		{"error status", 500, "application/json", `{"error":{}}`, 1 << 20, false},
		{"over the bound", 200, "application/json", `{"choices":[]}`, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c := NewCapture(rec, tt.max)
			c.Header().Set("Content-Type", tt.ctype)
			c.WriteHeader(tt.status)
			for i := 0; i < len(tt.body); i += 5 {
				_, _ = c.Write([]byte(tt.body[i:min(i+5, len(tt.body))]))
				c.Flush()
			}
			if rec.Body.String() != tt.body {
				t.Errorf("client got %q", rec.Body.String())
			}
			e, ok := c.Entry()
			if ok != tt.want {
				t.Fatalf("Entry() ok = %v, want %v", ok, tt.want)
			}
			if ok && string(e.Body) != tt.body {
				t.Errorf("stored %q", e.Body)
			}
		})
	}
}

func TestReplayWritesTheStoredBytes(t *testing.T) {
	e := &Entry{Status: 200, ContentType: "text/event-stream", Stream: true, Body: []byte("data: x\n\ndata: [DONE]\n\n")}
	rec := httptest.NewRecorder()
	Replay(rec, e)
	if rec.Code != http.StatusOK || rec.Body.String() != string(e.Body) || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("replay: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
}
