package hf

import (
	"encoding/json"
	"fmt"
)

// postProcessor adds special tokens around an encoded sequence when
// add_special_tokens is set. Only single sequences are supported (no pairs).
type postProcessor struct {
	prefix, suffix []uint32
}

func (p *postProcessor) apply(seq []uint32) []uint32 {
	if p == nil || (len(p.prefix) == 0 && len(p.suffix) == 0) {
		return seq
	}
	out := make([]uint32, 0, len(p.prefix)+len(seq)+len(p.suffix))
	out = append(out, p.prefix...)
	out = append(out, seq...)
	return append(out, p.suffix...)
}

// add composes q after p (Sequence of processors).
func (p *postProcessor) add(q *postProcessor) {
	if q == nil {
		return
	}
	p.prefix = append(append([]uint32{}, q.prefix...), p.prefix...)
	p.suffix = append(p.suffix, q.suffix...)
}

type templateJSON struct {
	Type          string            `json:"type"`
	Single        []json.RawMessage `json:"single"`
	Pair          json.RawMessage   `json:"pair"`
	SpecialTokens map[string]struct {
		ID     string   `json:"id"`
		IDs    []uint32 `json:"ids"`
		Tokens []string `json:"tokens"`
	} `json:"special_tokens"`
}

// parsePostProcessor builds a post-processor from its tokenizer.json form; a nil result means
// none.
func parsePostProcessor(raw json.RawMessage) (*postProcessor, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := componentType(raw)
	if err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	switch typ {
	case "ByteLevel":
		// Only trims offsets; ids are unchanged.
		var v struct {
			Type           string `json:"type"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
			TrimOffsets    bool   `json:"trim_offsets"`
			UseRegex       bool   `json:"use_regex"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("post_processor ByteLevel: %w", err)
		}
		return nil, nil
	case "TemplateProcessing":
		var v templateJSON
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("post_processor TemplateProcessing: %w", err)
		}
		p := &postProcessor{}
		seen := false
		for i, item := range v.Single {
			var it struct {
				SpecialToken *struct {
					ID     string `json:"id"`
					TypeID uint32 `json:"type_id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID     string `json:"id"`
					TypeID uint32 `json:"type_id"`
				} `json:"Sequence"`
			}
			if err := strictUnmarshal(item, &it); err != nil {
				return nil, fmt.Errorf("post_processor TemplateProcessing single[%d]: %w", i, err)
			}
			switch {
			case it.Sequence != nil && it.SpecialToken == nil:
				if seen || it.Sequence.ID != "A" {
					return nil, fmt.Errorf("post_processor TemplateProcessing single[%d]: sequence %q is not supported", i, it.Sequence.ID)
				}
				seen = true
			case it.SpecialToken != nil && it.Sequence == nil:
				st, ok := v.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("post_processor TemplateProcessing: special token %q is not defined", it.SpecialToken.ID)
				}
				if seen {
					p.suffix = append(p.suffix, st.IDs...)
				} else {
					p.prefix = append(p.prefix, st.IDs...)
				}
			default:
				return nil, fmt.Errorf("post_processor TemplateProcessing single[%d]: want one of SpecialToken or Sequence", i)
			}
		}
		if !seen {
			return nil, fmt.Errorf("post_processor TemplateProcessing: single template has no sequence $A")
		}
		return p, nil
	case "BertProcessing", "RobertaProcessing":
		var v struct {
			Type           string `json:"type"`
			Sep            [2]any `json:"sep"`
			Cls            [2]any `json:"cls"`
			TrimOffsets    bool   `json:"trim_offsets"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("post_processor %s: %w", typ, err)
		}
		cls, ok1 := v.Cls[1].(float64)
		sep, ok2 := v.Sep[1].(float64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("post_processor %s: cls and sep must be [token, id]", typ)
		}
		return &postProcessor{prefix: []uint32{uint32(cls)}, suffix: []uint32{uint32(sep)}}, nil
	case "Sequence":
		var v struct {
			Type       string            `json:"type"`
			Processors []json.RawMessage `json:"processors"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("post_processor Sequence: %w", err)
		}
		out := &postProcessor{}
		for i, r := range v.Processors {
			p, err := parsePostProcessor(r)
			if err != nil {
				return nil, fmt.Errorf("post_processor Sequence[%d]: %w", i, err)
			}
			out.add(p)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("post_processor %q is not supported", typ)
	}
}
