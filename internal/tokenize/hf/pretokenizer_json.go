package hf

import (
	"encoding/json"
	"fmt"
	"unicode"
)

// parsePreTokenizer builds a pre-tokenizer from its tokenizer.json form; a
// nil result means none.
func parsePreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := componentType(raw)
	if err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch typ {
	case "Split":
		var v struct {
			Type     string      `json:"type"`
			Pattern  patternJSON `json:"pattern"`
			Behavior string      `json:"behavior"`
			Invert   bool        `json:"invert"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		p, err := parsePattern(v.Pattern)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		if v.Pattern.Regex != nil {
			if k, ok := gpt4Patterns[*v.Pattern.Regex]; ok {
				p = gpt4Scanner{maxDigits: k}
			} else if sc, ok := knownScanners[*v.Pattern.Regex]; ok {
				p = sc
			}
		}
		b, err := parseSplitBehavior(v.Behavior)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		return &splitPre{pat: p, behavior: b, invert: v.Invert}, nil
	case "ByteLevel":
		v := struct {
			Type           string `json:"type"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
			TrimOffsets    bool   `json:"trim_offsets"`
			UseRegex       *bool  `json:"use_regex"`
		}{}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer ByteLevel: %w", err)
		}
		b := &byteLevelPre{addPrefixSpace: v.AddPrefixSpace}
		if v.UseRegex == nil || *v.UseRegex {
			b.re = &splitPre{pat: gpt2Scanner{}, behavior: splitIsolated}
		}
		return b, nil
	case "Metaspace":
		v := struct {
			Type           string  `json:"type"`
			Replacement    string  `json:"replacement"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
			PrependScheme  *string `json:"prepend_scheme"`
			Split          *bool   `json:"split"`
		}{}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Metaspace: %w", err)
		}
		scheme := "always"
		if v.PrependScheme != nil {
			scheme = *v.PrependScheme
		} else if v.AddPrefixSpace != nil && !*v.AddPrefixSpace {
			scheme = "never"
		}
		m := &metaspacePre{replacement: v.Replacement, splitWords: v.Split == nil || *v.Split}
		switch scheme {
		case "always":
			m.prependAll = true
		case "never":
		case "first":
			m.prependFirst = true
		default:
			return nil, fmt.Errorf("pre_tokenizer Metaspace: prepend_scheme %q is not supported", scheme)
		}
		if len([]rune(v.Replacement)) != 1 {
			return nil, fmt.Errorf("pre_tokenizer Metaspace: replacement must be one character, got %q", v.Replacement)
		}
		return m, nil
	case "Digits":
		var v struct {
			Type             string `json:"type"`
			IndividualDigits bool   `json:"individual_digits"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Digits: %w", err)
		}
		b := splitContiguous
		if v.IndividualDigits {
			b = splitIsolated
		}
		return &splitPre{pat: charPattern(isNumeric), behavior: b}, nil
	case "Punctuation":
		v := struct {
			Type     string `json:"type"`
			Behavior string `json:"behavior"`
		}{Behavior: "Isolated"}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Punctuation: %w", err)
		}
		b, err := parseSplitBehavior(v.Behavior)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Punctuation: %w", err)
		}
		return &splitPre{pat: charPattern(isPunc), behavior: b}, nil
	case "WhitespaceSplit":
		var v struct {
			Type string `json:"type"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer WhitespaceSplit: %w", err)
		}
		return &splitPre{pat: charPattern(unicode.IsSpace), behavior: splitRemoved}, nil
	case "Whitespace":
		var v struct {
			Type string `json:"type"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Whitespace: %w", err)
		}
		return &splitPre{pat: wordRuns{}, behavior: splitRemoved, invert: true}, nil
	case "Sequence":
		var v struct {
			Type          string            `json:"type"`
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Sequence: %w", err)
		}
		seq := make(preSequence, 0, len(v.PreTokenizers))
		for i, r := range v.PreTokenizers {
			p, err := parsePreTokenizer(r)
			if err != nil {
				return nil, fmt.Errorf("pre_tokenizer Sequence[%d]: %w", i, err)
			}
			if p != nil {
				seq = append(seq, p)
			}
		}
		switch len(seq) {
		case 0:
			return nil, nil
		case 1:
			return seq[0], nil
		}
		return seq, nil
	default:
		return nil, fmt.Errorf("pre_tokenizer %q is not supported", typ)
	}
}
