package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// RewriteModel returns body with the value of its top-level "model" field
// replaced by model, every other byte unchanged. When the field is absent it
// is inserted first in the object. Every top-level "model" key is rewritten
// (a JSON decoder keeps the last one). body must be a JSON object.
func RewriteModel(body []byte, model string) ([]byte, error) {
	spans, open, err := topLevelValueSpans(body, "model")
	if err != nil {
		return nil, fmt.Errorf("rewrite model: %w", err)
	}
	enc, err := json.Marshal(model)
	if err != nil {
		return nil, fmt.Errorf("rewrite model: %w", err)
	}
	if len(spans) == 0 {
		out := make([]byte, 0, len(body)+len(enc)+10)
		out = append(out, body[:open+1]...)
		out = append(out, `"model":`...)
		out = append(out, enc...)
		rest := body[open+1:]
		if len(bytes.TrimSpace(rest)) > 1 { // not just "}"
			out = append(out, ',')
		}
		return append(out, rest...), nil
	}
	out := make([]byte, 0, len(body)+len(enc))
	last := 0
	for _, s := range spans {
		out = append(out, body[last:s[0]]...)
		out = append(out, enc...)
		last = s[1]
	}
	return append(out, body[last:]...), nil
}

// topLevelValueSpans returns the [start, end) byte spans of the values of
// the top-level key name, and the offset of the opening brace.
func topLevelValueSpans(body []byte, name string) ([][2]int, int, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, 0, fmt.Errorf("body is not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, 0, errors.New("body is not a JSON object")
	}
	open := int(dec.InputOffset()) - 1
	var spans [][2]int
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, 0, fmt.Errorf("body is not a JSON object: %w", err)
		}
		key, _ := tok.(string)
		afterKey := int(dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, 0, fmt.Errorf("body is not a JSON object: %w", err)
		}
		end := int(dec.InputOffset())
		if key != name {
			continue
		}
		// The value starts after the colon and any white space.
		start := afterKey
		for start < end && (body[start] == ':' || isSpaceByte(body[start])) {
			start++
		}
		spans = append(spans, [2]int{start, end})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, 0, errors.New("body is not a JSON object: unterminated")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, 0, errors.New("body has data after the JSON object")
	}
	return spans, open, nil
}

func isSpaceByte(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
