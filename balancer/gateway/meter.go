package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// maxMeteredBody bounds the non-streamed response body a Meter keeps to
// read its usage; a larger body is counted by its size (see Completion).
const maxMeteredBody = 4 << 20

// Meter wraps a client's ResponseWriter and counts the completion tokens of
// the response passing through it: usage.completion_tokens when the
// response carries it (a non-streamed body, or a stream's usage chunk when
// the client asked for stream_options.include_usage), else an estimate
// (Completion). It also writes the rate-limit headers over whatever the
// upstream sent. Not safe for concurrent use, like a ResponseWriter.
type Meter struct {
	w       http.ResponseWriter
	a       *Admission
	status  int
	sse     bool
	passive bool // count nothing

	line []byte // a stream's unfinished line
	body []byte // a non-streamed body, up to maxMeteredBody
	size int64

	usage    int64
	hasUsage bool
	events   int64
}

// Meter returns a's meter over w. Without keys and limits there is nothing
// to count for: the meter only passes the response on.
func (a *Admission) Meter(w http.ResponseWriter) *Meter {
	return &Meter{w: w, a: a, passive: !a.limited && a.id.Key == nil}
}

// Header implements http.ResponseWriter.
func (m *Meter) Header() http.Header { return m.w.Header() }

// Unwrap returns the wrapped writer (http.ResponseController finds Flush
// and deadlines through it).
func (m *Meter) Unwrap() http.ResponseWriter { return m.w }

// Flush flushes the wrapped writer.
func (m *Meter) Flush() { _ = http.NewResponseController(m.w).Flush() }

// WriteHeader writes the status with the rate-limit headers on top.
func (m *Meter) WriteHeader(code int) {
	if m.status == 0 {
		m.status = code
		m.sse = strings.HasPrefix(m.w.Header().Get("Content-Type"), "text/event-stream")
		m.a.SetHeaders(m.w.Header())
	}
	m.w.WriteHeader(code)
}

// Write passes p on and reads the usage from it.
func (m *Meter) Write(p []byte) (int, error) {
	if m.status == 0 {
		m.WriteHeader(http.StatusOK)
	}
	if m.status < 300 && !m.passive {
		m.observe(p)
	}
	return m.w.Write(p)
}

func (m *Meter) observe(p []byte) {
	m.size += int64(len(p))
	if !m.sse {
		if len(m.body)+len(p) <= maxMeteredBody {
			m.body = append(m.body, p...)
		} else {
			m.body = m.body[:0]
			m.hasUsage = false
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(m.line)+len(p) <= maxMeteredBody {
				m.line = append(m.line, p...)
			}
			return
		}
		if len(m.line) > 0 {
			m.line = append(m.line, p[:i]...)
			m.event(m.line)
			m.line = m.line[:0]
		} else {
			m.event(p[:i])
		}
		p = p[i+1:]
	}
}

// chunk is what a Meter reads of a completion chunk or body.
type chunk struct {
	Choices []struct {
		Text    string `json:"text"`
		Delta   *delta `json:"delta"`
		Message *delta `json:"message"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

type delta struct {
	Content          string          `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
}

// event reads one line of a stream: a "data:" line holds a chunk.
func (m *Meter) event(line []byte) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return // [DONE]
	}
	var c chunk
	if json.Unmarshal(data, &c) != nil {
		return
	}
	if c.Usage != nil {
		m.usage, m.hasUsage = c.Usage.CompletionTokens, true
	}
	for _, ch := range c.Choices {
		if ch.Text != "" || (ch.Delta != nil && (ch.Delta.Content != "" || ch.Delta.ReasoningContent != "" || len(ch.Delta.ToolCalls) > 2)) {
			m.events++
		}
	}
}

// Completion returns the completion tokens of the response written so far:
// its usage.completion_tokens when it had one; for a stream without usage,
// one token per chunk that carried text (engines stream about one token a
// chunk); for a body without usage, its text length / 4 (or its whole size
// / 4 when it was too large to keep). Error responses count 0.
func (m *Meter) Completion() int64 {
	if m.status >= 300 || m.status == 0 || m.passive {
		return 0
	}
	if m.sse {
		if m.hasUsage {
			return m.usage
		}
		return m.events
	}
	if len(m.body) == 0 {
		return (m.size + 3) / 4
	}
	var c chunk
	if json.Unmarshal(m.body, &c) != nil {
		return (m.size + 3) / 4
	}
	if c.Usage != nil {
		return c.Usage.CompletionTokens
	}
	var n int
	for _, ch := range c.Choices {
		n += len(ch.Text)
		if ch.Message != nil {
			n += len(ch.Message.Content) + len(ch.Message.ReasoningContent)
		}
	}
	return int64(n+3) / 4
}
