package proxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/inferrail/inferrail/internal/openai"
)

// chunked is a body that returns its parts one Read at a time.
type chunked struct{ parts []string }

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	if c.parts[0] = c.parts[0][n:]; c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func (c *chunked) Close() error { return nil }

func peekResp(ct string, parts ...string) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", ct)
	return &http.Response{StatusCode: 200, Header: h, Body: &chunked{parts: parts}}
}

// TestPeek: Peek reads until the start is decided (a field name split over
// reads) and the body then replays it whole; a malformed start, an empty
// body or a read error fail with nothing consumed by a client.
func TestPeek(t *testing.T) {
	resp := peekResp("text/event-stream", "da", "ta: {}\n\n", "data: [DONE]\n\n")
	if err := Peek(resp, openai.NewAnswerCheck(resp.Header)); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	if _, err := Stream(rec, resp, nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.Body.String(); got != "data: {}\n\ndata: [DONE]\n\n" {
		t.Fatalf("streamed %q", got)
	}

	for _, tc := range []struct {
		name string
		resp *http.Response
		want error
	}{
		{"garbage", peekResp("application/json", "\x00\xff{"), openai.ErrMalformedAnswer},
		{"wrong type", peekResp("text/plain", "{}"), openai.ErrMalformedAnswer},
		{"empty", peekResp("application/json"), ErrBodyEnded},
		{"white space", peekResp("application/json", " \n"), ErrBodyEnded},
	} {
		if err := Peek(tc.resp, openai.NewAnswerCheck(tc.resp.Header)); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	broken := peekResp("application/json")
	broken.Body = io.NopCloser(iotest.ErrReader(errors.New("reset")))
	if err := Peek(broken, openai.NewAnswerCheck(broken.Header)); err == nil || !strings.Contains(err.Error(), "reset") {
		t.Errorf("read error: %v", err)
	}
}

// TestStreamStopsAtMalformed: once a stream turns malformed, Stream writes
// the well-formed bytes before it, none after, and returns the error.
func TestStreamStopsAtMalformed(t *testing.T) {
	resp := peekResp("text/event-stream", "data: 1\n\n", "data: 2\n\n<html>", "data: 3\n\n")
	if err := Peek(resp, openai.NewAnswerCheck(resp.Header)); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	_, err := Stream(rec, resp, nil)
	if !errors.Is(err, openai.ErrMalformedAnswer) {
		t.Fatalf("Stream: %v, want ErrMalformedAnswer", err)
	}
	if got := rec.Body.String(); got != "data: 1\n\ndata: 2\n\n" {
		t.Fatalf("the client got %q", got)
	}
}
