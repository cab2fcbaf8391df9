package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// FirstToken watches a streamed chat or completions response for its first
// token-bearing event: the moment the engine's prefill of the prompt is over.
// Engines send a stream's response headers (and sometimes a role-only first
// chunk) when they admit the request, long before the first token, so the
// headers say nothing about prefill; this event does.
//
// An event bears a token when a choice carries non-empty text, content,
// reasoning or tool calls, or a finish reason; when it is an error or
// [DONE]; or when its data is not a JSON object this watcher understands (an
// unknown shape must not keep a request counted as prefilling forever).
// A FirstToken is not safe for concurrent use; the zero value is ready.
type FirstToken struct {
	dec  Decoder
	evs  []Event
	seen bool
	// count is the number of events decoded until the first token-bearing
	// one, that one included.
	count int
}

// Seen reports whether the first token-bearing event has been fed.
func (f *FirstToken) Seen() bool { return f.seen }

// Feed consumes the next bytes of the response body and reports whether
// they completed the first token-bearing event (true exactly once). After
// that it returns false at once without decoding.
func (f *FirstToken) Feed(p []byte) bool {
	if f.seen {
		return false
	}
	var err error
	f.evs, err = f.dec.Feed(f.evs[:0], p)
	if err != nil { // a line over the decoder's limit is certainly not a role-only chunk
		f.seen = true
		return true
	}
	for i := range f.evs {
		f.count++
		if bearsToken(f.evs[i].Data) {
			f.seen = true
			clear(f.evs)
			f.evs = nil
			return true
		}
	}
	return false
}

// streamChunk is the part of a stream event FirstToken reads.
type streamChunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func bearsToken(data string) bool {
	if data == Done {
		return true
	}
	var c streamChunk
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return true
	}
	if len(c.Error) > 0 && !isNull(c.Error) {
		return true
	}
	if len(c.Choices) == 0 {
		return c.Usage == nil || c.Usage.CompletionTokens > 0
	}
	for _, ch := range c.Choices {
		d := &ch.Delta
		if ch.Text != "" || d.Content != "" || d.ReasoningContent != "" || d.Reasoning != "" || ch.FinishReason != nil {
			return true
		}
		if t := bytes.TrimSpace(d.ToolCalls); len(t) > 0 && !isNull(t) && !bytes.Equal(t, []byte("[]")) {
			return true
		}
	}
	return false
}

// FirstTokenReader wraps a streamed response body and calls OnFirstToken
// once, from Read, when the first token-bearing event has passed through it
// (see FirstToken). The bytes are passed on unchanged.
type FirstTokenReader struct {
	R io.ReadCloser
	// OnFirstToken is called at most once; it must not block.
	OnFirstToken func()
	// OnLater, if set, is called from every Read that passes bytes after
	// the first token-bearing event (its own read too, when a later event
	// began in it): the stream's later events (its next tokens, its end),
	// each the end of an engine step. events is how many events began in
	// those bytes (0: they continue one), counted by their data lines, one
	// an event as engines send them. It must not block.
	OnLater func(events int)
	f       FirstToken
	seen    bool
	// starts is the events begun so far (data lines), reported those
	// reported to OnLater or before the first token's end.
	starts, reported int
	// tail is the last bytes read, for a data line's start split across
	// reads; the stream starts as if after a line end.
	tail    [len(dataLine) - 1]byte
	tailLen int
	begun   bool
}

// dataLine starts a server-sent event's data line.
const dataLine = "\ndata:"

// Read implements io.Reader.
func (r *FirstTokenReader) Read(p []byte) (int, error) {
	n, err := r.R.Read(p)
	if n <= 0 {
		return n, err
	}
	if r.OnLater != nil {
		r.countStarts(p[:n])
	}
	switch {
	case r.seen:
	case r.f.Feed(p[:n]):
		r.seen = true
		r.reported = max(r.reported, r.f.count)
		if r.OnFirstToken != nil {
			r.OnFirstToken()
		}
		if r.starts <= r.reported {
			return n, err
		}
	default:
		return n, err
	}
	if r.OnLater != nil {
		later := max(r.starts-r.reported, 0)
		r.reported += later
		r.OnLater(later)
	}
	return n, err
}

// countStarts adds the data lines that begin in b to r.starts.
func (r *FirstTokenReader) countStarts(b []byte) {
	if !r.begun {
		r.begun, r.tail[0], r.tailLen = true, '\n', 1 // the body's first line
	}
	var buf [2*len(dataLine) - 2]byte
	w := append(append(buf[:0], r.tail[:r.tailLen]...), b[:min(len(b), len(dataLine)-1)]...)
	r.starts += bytes.Count(w, []byte(dataLine)) + bytes.Count(b, []byte(dataLine)) // no match lies within either short end alone
	w = append(append(buf[:0], r.tail[:r.tailLen]...), b[max(len(b)-len(r.tail), 0):]...)
	r.tailLen = copy(r.tail[:], w[max(len(w)-len(r.tail), 0):])
}

// Close implements io.Closer.
func (r *FirstTokenReader) Close() error { return r.R.Close() }

// IsEventStream reports whether h declares a server-sent-events body
// (Content-Type text/event-stream, any parameters).
func IsEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	return len(ct) >= len("text/event-stream") && strings.EqualFold(ct[:len("text/event-stream")], "text/event-stream")
}
