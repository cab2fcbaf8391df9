package enginesim

import (
	"strconv"
	"unicode/utf8"

	"github.com/inferrail/inferrail/internal/openai"
)

// chunkEncoder writes the common stream chunks (no token ids, no continuous
// usage) without reflection: they are most of the simulator's output. The
// bytes equal what encoding/json writes for the openai types, except that
// strings are escaped like vLLM's pydantic serializer (no HTML escaping).
type chunkEncoder struct {
	prefix []byte // {"id":…,"object":…,"created":…,"model":…,"choices":[
	buf    []byte
}

func newChunkEncoder(id, object string, created int64, model string) *chunkEncoder {
	p := make([]byte, 0, 128)
	p = append(p, `{"id":`...)
	p = appendJSONString(p, id)
	p = append(p, `,"object":`...)
	p = appendJSONString(p, object)
	p = append(p, `,"created":`...)
	p = strconv.AppendInt(p, created, 10)
	p = append(p, `,"model":`...)
	p = appendJSONString(p, model)
	p = append(p, `,"choices":[`...)
	return &chunkEncoder{prefix: p}
}

// chatDelta encodes a chat content chunk; finish is "" for none.
func (e *chunkEncoder) chatDelta(content, finish string, stop openai.StopReason) []byte {
	b := append(e.buf[:0], e.prefix...)
	b = append(b, `{"index":0,"delta":{"content":`...)
	b = appendJSONString(b, content)
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = appendFinish(b, finish, stop)
	b = append(b, `,"token_ids":null}]}`...)
	e.buf = b
	return b
}

// completionDelta encodes a completion chunk; finish is "" for none.
func (e *chunkEncoder) completionDelta(text, finish string, stop openai.StopReason) []byte {
	b := append(e.buf[:0], e.prefix...)
	b = append(b, `{"index":0,"text":`...)
	b = appendJSONString(b, text)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, `null,"stop_reason":null`...)
	} else {
		b = appendJSONString(b, finish)
		b = append(b, `,"stop_reason":`...)
		b = appendStopReason(b, stop)
	}
	b = append(b, `,"prompt_token_ids":null,"token_ids":null}],"usage":null}`...)
	e.buf = b
	return b
}

func appendFinish(b []byte, finish string, stop openai.StopReason) []byte {
	if finish == "" {
		return append(b, "null"...)
	}
	b = appendJSONString(b, finish)
	b = append(b, `,"stop_reason":`...)
	return appendStopReason(b, stop)
}

func appendStopReason(b []byte, s openai.StopReason) []byte {
	switch {
	case s.IsStr:
		return appendJSONString(b, s.Str)
	case s.IsToken:
		return strconv.AppendUint(b, uint64(s.TokenID), 10)
	}
	return append(b, "null"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way pydantic (serde_json)
// writes it: quotes, backslashes and control characters escaped, everything
// else (non-ASCII included) verbatim; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
