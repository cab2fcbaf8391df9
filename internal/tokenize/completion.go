package tokenize

import (
	"fmt"
	"math"

	"github.com/ardanlabs/jinja"
)

// Completion tokenizes an OpenAI completions request body. Its prompt may be
// a string, a list of strings, a list of token ids or a list of such lists;
// each becomes one Prompt. Text is encoded with the tokenizer's special
// tokens (BOS, ...) unless the request sets add_special_tokens to false, as
// vLLM does. A token-id prompt is returned as given, with an empty Text.
//
// A caller that also needs fields of the body decodes it once with
// DecodeBody and calls CompletionBody instead.
func (m *Model) Completion(body []byte) ([]Prompt, error) {
	b, err := DecodeBody(body)
	if err != nil {
		return nil, err
	}
	return m.completion(b.root)
}

// completion is Completion for a decoded body (a dict).
func (m *Model) completion(root jinja.Value) ([]Prompt, error) {
	add, err := boolField(root, "add_special_tokens", true)
	if err != nil {
		return nil, err
	}
	pv, ok := dictGet(root, "prompt")
	if !ok || pv.IsNone() {
		return nil, badRequest("prompt is required (prompt_embeds are not supported)")
	}
	switch {
	case pv.IsString():
		p, err := m.completionText(pv.AsString(), add)
		if err != nil {
			return nil, err
		}
		return []Prompt{p}, nil
	case pv.IsList():
		items := pv.AsList().Items
		if len(items) == 0 {
			return nil, badRequest("prompt must not be empty")
		}
		if items[0].IsInt() {
			ids, err := tokenIDs(pv)
			if err != nil {
				return nil, err
			}
			return []Prompt{{TokenIDs: ids}}, nil
		}
		out := make([]Prompt, 0, len(items))
		for i, it := range items {
			switch {
			case it.IsString():
				p, err := m.completionText(it.AsString(), add)
				if err != nil {
					return nil, err
				}
				out = append(out, p)
			case it.IsList():
				ids, err := tokenIDs(it)
				if err != nil {
					return nil, badRequest("prompt[%d]: %v", i, err)
				}
				out = append(out, Prompt{TokenIDs: ids})
			default:
				return nil, badRequest("prompt[%d] must be a string or a list of token ids", i)
			}
		}
		return out, nil
	}
	return nil, badRequest("prompt must be a string, a list of strings or a list of token ids")
}

func (m *Model) completionText(text string, add bool) (Prompt, error) {
	ids, err := m.enc.Encode(text, add)
	if err != nil {
		return Prompt{}, fmt.Errorf("encode completion prompt: %w", err)
	}
	return Prompt{Text: text, TokenIDs: ids}, nil
}

func tokenIDs(v jinja.Value) ([]uint32, error) {
	items := v.AsList().Items
	if len(items) == 0 {
		return nil, badRequest("a token-id prompt must not be empty")
	}
	ids := make([]uint32, len(items))
	for i, it := range items {
		if !it.IsInt() || it.AsInt() < 0 || it.AsInt() > math.MaxUint32 {
			return nil, badRequest("token id %d is not an integer in [0, 2^32)", i)
		}
		ids[i] = uint32(it.AsInt())
	}
	return ids, nil
}
