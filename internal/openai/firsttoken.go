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
	// the one that passed the first token: the stream's later events (its
	// next tokens, its end), each the end of an engine step. It must not
	// block.
	OnLater func()
	f       FirstToken
	seen    bool
}

// Read implements io.Reader.
func (r *FirstTokenReader) Read(p []byte) (int, error) {
	n, err := r.R.Read(p)
	if n <= 0 {
		return n, err
	}
	switch {
	case r.seen:
		if r.OnLater != nil {
			r.OnLater()
		}
	case r.f.Feed(p[:n]):
		r.seen = true
		if r.OnFirstToken != nil {
			r.OnFirstToken()
		}
	}
	return n, err
}

// Close implements io.Closer.
func (r *FirstTokenReader) Close() error { return r.R.Close() }

// IsEventStream reports whether h declares a server-sent-events body
// (Content-Type text/event-stream, any parameters).
func IsEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	return len(ct) >= len("text/event-stream") && strings.EqualFold(ct[:len("text/event-stream")], "text/event-stream")
}
