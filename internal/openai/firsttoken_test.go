package openai

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestFirstToken(t *testing.T) {
	role := `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	tests := []struct {
		name   string
		events []string
		want   int // index of the event that bears the first token; -1 none
	}{
		{"role chunk then content", []string{role, `data: {"choices":[{"delta":{"content":"Hi"}}]}` + "\n\n"}, 1},
		{"completions text", []string{`data: {"choices":[{"text":"x","finish_reason":null}]}` + "\n\n"}, 0},
		{"empty text then finish", []string{`data: {"choices":[{"text":""}]}` + "\n\n", `data: {"choices":[{"text":"","finish_reason":"length"}]}` + "\n\n"}, 1},
		{"tool call", []string{role, `data: {"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}` + "\n\n"}, 1},
		{"empty tool calls do not count", []string{`data: {"choices":[{"delta":{"tool_calls":[]}}]}` + "\n\n"}, -1},
		{"reasoning", []string{role, `data: {"choices":[{"delta":{"reasoning_content":"hm"}}]}` + "\n\n"}, 1},
		{"usage without completion tokens", []string{`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":0}}` + "\n\n"}, -1},
		{"error event", []string{`data: {"error":{"message":"boom"}}` + "\n\n"}, 0},
		{"done", []string{role, "data: [DONE]\n\n"}, 1},
		{"not json", []string{"data: hello\n\n"}, 0},
		{"comment only", []string{": keep-alive\n\n", role}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f FirstToken
			got := -1
			for i, e := range tt.events {
				if f.Feed([]byte(e)) {
					if got >= 0 {
						t.Fatalf("Feed reported a first token twice")
					}
					got = i
				}
			}
			if got != tt.want {
				t.Errorf("first token at event %d, want %d", got, tt.want)
			}
			if f.Seen() != (tt.want >= 0) {
				t.Errorf("Seen() = %v", f.Seen())
			}
		})
	}
}

// An event split anywhere across reads is found once, in the read that
// completes it, the events after it are counted once each (OnLater), with
// LF or CRLF line ends, and the bytes pass through unchanged.
func TestFirstTokenReaderSplits(t *testing.T) {
	lf := `data: {"choices":[{"delta":{"role":"assistant","content":""}}]}` + "\n\n" +
		`data: {"choices":[{"delta":{"content":"Hello"}}]}` + "\n\n" +
		`data: {"choices":[{"delta":{"content":" there"}}]}` + "\n\n" +
		`data: {"choices":[{"delta":{"content":"!"}}]}` + "\n\n" + "data: [DONE]\n\n"
	const laterEvents = 3
	for _, body := range []string{lf, strings.ReplaceAll(lf, "\n", "\r\n")} {
		end := strings.Index(body, "Hello") + len(`Hello"}}]}`) + 2
		for size := 1; size <= len(body); size++ {
			calls, at := 0, -1
			read, later, events, after := 0, 0, 0, 0 // OnLater calls and events; reads with bytes after the first token's
			r := &FirstTokenReader{R: io.NopCloser(&chunked{b: []byte(body), n: size}), OnFirstToken: func() { calls++ },
				OnLater: func(n int) {
					if calls == 0 {
						t.Fatalf("size %d: OnLater before the first token", size)
					}
					later++
					events += n
				}}
			var out bytes.Buffer
			buf := make([]byte, 64)
			for {
				n, err := r.Read(buf)
				read += n
				if at >= 0 && n > 0 {
					after++
				}
				if calls == 1 && at < 0 {
					at = read
				}
				out.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if calls != 1 {
				t.Fatalf("size %d: OnFirstToken called %d times", size, calls)
			}
			if at < end {
				t.Fatalf("size %d: first token reported after %d bytes, before the event ended at %d", size, at, end)
			}
			if later < after || later > after+1 || (size == 1 && later == 0) {
				t.Fatalf("size %d: OnLater called %d times for %d reads after the first token's", size, later, after)
			}
			if events != laterEvents {
				t.Fatalf("size %d (%q…): %d events counted after the first token, want %d", size, body[:8], events, laterEvents)
			}
			if out.String() != body {
				t.Fatalf("size %d: bytes changed", size)
			}
		}
	}
}

type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[n:]
	return n, nil
}

func FuzzFirstToken(f *testing.F) {
	f.Add([]byte(`data: {"choices":[{"delta":{"content":"x"}}]}` + "\n\n"))
	f.Add([]byte("data: [DONE]\r\n\r\n"))
	f.Add([]byte(": c\n\ndata: {\"choices\":[{\"text\":\"\"}]}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var a, c FirstToken
		whole := a.Feed(b)
		split := false
		for i := range b {
			split = c.Feed(b[i:i+1]) || split
		}
		if whole != split {
			t.Fatalf("whole %v, byte by byte %v", whole, split)
		}
		// The reader counts the events after the first token alike
		// however the body is split, and never more than its data lines.
		count := func(size int) (first, events int) {
			r := &FirstTokenReader{R: io.NopCloser(&chunked{b: b, n: size}), OnFirstToken: func() { first++ },
				OnLater: func(n int) {
					if n < 0 {
						t.Fatalf("size %d: OnLater(%d)", size, n)
					}
					events += n
				}}
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatal(err)
			}
			return first, events
		}
		if len(b) == 0 {
			return
		}
		f1, e1 := count(1)
		fw, ew := count(len(b))
		if f1 != fw || e1 != ew || e1 > bytes.Count(append([]byte("\n"), b...), []byte(dataLine)) {
			t.Fatalf("byte by byte %d first tokens and %d later events, whole %d and %d", f1, e1, fw, ew)
		}
	})
}
