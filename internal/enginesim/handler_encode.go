package enginesim

import (
	"strconv"

	"github.com/inferrail/inferrail/internal/jsonenc"
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
	p = jsonenc.AppendString(p, id)
	p = append(p, `,"object":`...)
	p = jsonenc.AppendString(p, object)
	p = append(p, `,"created":`...)
	p = strconv.AppendInt(p, created, 10)
	p = append(p, `,"model":`...)
	p = jsonenc.AppendString(p, model)
	p = append(p, `,"choices":[`...)
	return &chunkEncoder{prefix: p}
}

// chatDelta encodes a chat content chunk; finish is "" for none.
func (e *chunkEncoder) chatDelta(content, finish string, stop openai.StopReason) []byte {
	b := append(e.buf[:0], e.prefix...)
	b = append(b, `{"index":0,"delta":{"content":`...)
	b = jsonenc.AppendString(b, content)
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
	b = jsonenc.AppendString(b, text)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, `null,"stop_reason":null`...)
	} else {
		b = jsonenc.AppendString(b, finish)
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
	b = jsonenc.AppendString(b, finish)
	b = append(b, `,"stop_reason":`...)
	return appendStopReason(b, stop)
}

func appendStopReason(b []byte, s openai.StopReason) []byte {
	switch {
	case s.IsStr:
		return jsonenc.AppendString(b, s.Str)
	case s.IsToken:
		return strconv.AppendUint(b, uint64(s.TokenID), 10)
	}
	return append(b, "null"...)
}
