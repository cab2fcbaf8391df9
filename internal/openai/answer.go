package openai

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
)

// ErrMalformedAnswer is the error of a successful (2xx) answer whose body is
// not what an OpenAI-compatible engine sends.
var ErrMalformedAnswer = errors.New("malformed answer")

// AnswerCheck checks, as its bytes go by, that a 2xx answer is shaped like
// an OpenAI-compatible engine's: its Content-Type is application/json or
// text/event-stream (any parameters); a JSON body starts (after white space)
// with an object or an array; every line of an event stream is blank, a
// comment (":…") or one of the fields engines send (data, event, id, retry,
// each followed by a colon), after an optional leading BOM.
//
// vLLM answers with FastAPI's JSONResponse and StreamingResponse(media_type=
// "text/event-stream") (vllm/entrypoints/openai/api_server.py), SGLang with
// ORJSONResponse and the same StreamingResponse
// (python/sglang/srt/entrypoints/http_server.py), llama.cpp's server with
// "application/json; charset=utf-8" and "text/event-stream"
// (tools/server/server.cpp): a body outside these is a broken or wrong
// upstream, and the balancer treats it like a 5xx (docs/reliability.md).
//
// A JSON body is checked only at its start: its end is not parsed (the
// balancer streams bodies through without buffering them). An AnswerCheck is
// not safe for concurrent use.
type AnswerCheck struct {
	format  answerFormat
	decided bool // the start was seen and is well-formed
	// The event-stream line state.
	inValue bool    // past the field name's colon: skip to the line end
	name    [5]byte // the field name so far ("retry" is the longest)
	n       int     // bytes in name
	bom     int     // leading BOM bytes matched (-1: past the BOM)
	err     error   // the first malformation found
}

type answerFormat uint8

const (
	formatOther answerFormat = iota
	formatJSON
	formatEventStream
)

// NewAnswerCheck returns the check for an answer with header h.
func NewAnswerCheck(h http.Header) *AnswerCheck {
	c := &AnswerCheck{}
	c.Reset(h)
	return c
}

// Reset makes c a fresh check for an answer with header h.
func (c *AnswerCheck) Reset(h http.Header) {
	*c = AnswerCheck{format: answerFormatOf(h.Get("Content-Type"))}
}

// answerFormatOf returns the format a Content-Type value declares.
func answerFormatOf(ct string) answerFormat {
	// The common values without mime's parse and its allocations.
	switch ct {
	case "application/json", "application/json; charset=utf-8":
		return formatJSON
	case "text/event-stream", "text/event-stream; charset=utf-8":
		return formatEventStream
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return formatOther
	}
	switch mt {
	case "application/json":
		return formatJSON
	case "text/event-stream":
		return formatEventStream
	}
	return formatOther
}

// Decided reports whether the bytes checked so far show a well-formed start
// (a JSON body's first byte, an event stream's first field name).
func (c *AnswerCheck) Decided() bool { return c.decided }

// Check consumes the next bytes of the body. It returns how many of them are
// well-formed: all of p and a nil error, or the bytes before the line (or,
// for JSON, the byte) that is not and an error wrapping ErrMalformedAnswer.
// Every byte of a field name is checked as it comes (it must continue one
// of the four names), but the part of a name given to an earlier call was
// counted there: at most "retry", never a byte no field name has there. After an error every call returns it again.
func (c *AnswerCheck) Check(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	switch c.format {
	case formatJSON:
		return c.checkJSON(p)
	case formatEventStream:
		return c.checkEvents(p)
	}
	c.err = fmt.Errorf("%w: content type is neither application/json nor text/event-stream", ErrMalformedAnswer)
	return 0, c.err
}

func (c *AnswerCheck) checkJSON(p []byte) (int, error) {
	if c.decided {
		return len(p), nil
	}
	for i, b := range p {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			c.decided = true
			return len(p), nil
		}
		c.err = fmt.Errorf("%w: JSON body starts with %q", ErrMalformedAnswer, b)
		return i, c.err
	}
	return len(p), nil
}

// checkEvents runs the event-stream line check over p.
func (c *AnswerCheck) checkEvents(p []byte) (int, error) {
	for i := 0; i < len(p); i++ {
		b := p[i]
		if c.bom >= 0 { // a leading BOM, as the standard allows
			if b == "\xEF\xBB\xBF"[c.bom] {
				if c.bom++; c.bom == 3 {
					c.bom = -1
				}
				continue
			}
			if c.bom > 0 {
				return c.malformed(i, "a broken byte-order mark")
			}
			c.bom = -1
		}
		if c.inValue {
			// Skip to the line end (the common case: most bytes are data),
			// with the vectorised IndexByte: engines end lines with LF.
			rest := p[i:]
			j := bytes.IndexByte(rest, '\n')
			if j < 0 {
				j = len(rest)
			}
			if k := bytes.IndexByte(rest[:j], '\r'); k >= 0 {
				j = k
			}
			if j == len(rest) {
				return len(p), nil
			}
			i += j
			c.inValue = false
			continue
		}
		switch {
		case b == '\n' || b == '\r':
			if c.n > 0 {
				return c.malformed(i, fmt.Sprintf("a line %q without a colon", c.name[:c.n]))
			}
		case b == ':':
			switch string(c.name[:c.n]) {
			case "", "data", "event", "id", "retry":
			default:
				return c.malformed(i, fmt.Sprintf("an unknown field %q", c.name[:c.n]))
			}
			c.n, c.inValue, c.decided = 0, true, true
		default:
			// A byte that no field name continues with fails at once, so
			// that a garbage line is cut at its first byte.
			if c.n == len(c.name) { // past "retry", the longest name
				return c.malformed(i, fmt.Sprintf("an unknown field %q…", c.name[:c.n]))
			}
			c.name[c.n] = b
			if !fieldPrefix(c.name[:c.n+1]) {
				return c.malformed(i, fmt.Sprintf("an unknown field %q…", c.name[:c.n+1]))
			}
			c.n++
		}
	}
	return len(p), nil
}

// malformed records the malformation found at p[i] and returns how many
// bytes of p are well-formed: those before the current line's field name.
// fieldPrefix reports whether name begins a field name engines send.
func fieldPrefix(name []byte) bool {
	for _, f := range [...]string{"data", "event", "id", "retry"} {
		if len(name) <= len(f) && string(name) == f[:len(name)] {
			return true
		}
	}
	return false
}

func (c *AnswerCheck) malformed(i int, what string) (int, error) {
	c.err = fmt.Errorf("%w: event stream has %s", ErrMalformedAnswer, what)
	return max(i-c.n, 0), c.err
}
