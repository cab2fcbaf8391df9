package respcache

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/inferrail/inferrail/internal/openai"
)

// Header is the response header that says what the cache did.
const Header = "X-Inferrail-Cache"

// Values of Header.
const (
	StatusHit    = "hit"
	StatusMiss   = "miss"
	StatusBypass = "bypass"
)

// Capture passes a response to the client while keeping a copy of its
// bytes, up to a bound. It forwards Flush (and http.ResponseController's
// other calls through Unwrap).
type Capture struct {
	w      http.ResponseWriter
	max    int64
	status int
	ctype  string
	buf    bytes.Buffer
	over   bool
}

// NewCapture wraps w, keeping at most max bytes.
func NewCapture(w http.ResponseWriter, max int64) *Capture { return &Capture{w: w, max: max} }

// Header returns the wrapped writer's header.
func (c *Capture) Header() http.Header { return c.w.Header() }

// WriteHeader records the status and content type and passes them on.
func (c *Capture) WriteHeader(code int) {
	if c.status == 0 && code >= 200 {
		c.status = code
		c.ctype = c.w.Header().Get("Content-Type")
	}
	c.w.WriteHeader(code)
}

// Write copies p and passes it on.
func (c *Capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !c.over {
		if int64(c.buf.Len()+len(p)) > c.max {
			c.over = true
			c.buf = bytes.Buffer{}
		} else {
			c.buf.Write(p)
		}
	}
	return c.w.Write(p)
}

// Flush flushes the wrapped writer.
func (c *Capture) Flush() { _ = http.NewResponseController(c.w).Flush() }

// Unwrap returns the wrapped writer.
func (c *Capture) Unwrap() http.ResponseWriter { return c.w }

// Entry returns the captured response when it may be stored: a 200 within
// the bound that is complete, that is an event stream ending with its
// data: [DONE] event, or a JSON body that parses whole. A response that
// failed, was cut short or was cancelled never is.
func (c *Capture) Entry() (*Entry, bool) {
	if c.status != http.StatusOK || c.over {
		return nil, false
	}
	body := c.buf.Bytes()
	e := &Entry{Status: c.status, ContentType: c.ctype, Body: bytes.Clone(body)}
	if openai.IsEventStream(http.Header{"Content-Type": {c.ctype}}) {
		e.Stream = true
		if !streamDone(body) {
			return nil, false
		}
		return e, true
	}
	if !json.Valid(body) {
		return nil, false
	}
	return e, true
}

// streamDone reports whether an event stream ends with its data: [DONE]
// event (the OpenAI and vLLM end of stream), terminated by a blank line.
func streamDone(b []byte) bool {
	if !bytes.HasSuffix(b, []byte("\n\n")) && !bytes.HasSuffix(b, []byte("\r\n\r\n")) {
		return false
	}
	b = bytes.TrimRight(b, "\r\n")
	i := bytes.LastIndexAny(b, "\r\n")
	last := bytes.TrimSpace(b[i+1:])
	return bytes.Equal(last, []byte("data: [DONE]")) || bytes.Equal(last, []byte("data:[DONE]"))
}

// Replay writes a stored entry: its status, content type and the exact
// bytes first captured, flushed.
func Replay(w http.ResponseWriter, e *Entry) {
	h := w.Header()
	if e.ContentType != "" {
		h.Set("Content-Type", e.ContentType)
	}
	if !e.Stream {
		h.Set("Content-Length", strconv.Itoa(len(e.Body)))
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.Body)
	_ = http.NewResponseController(w).Flush()
}
