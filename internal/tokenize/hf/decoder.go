package hf

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder turns a list of token strings back into text, one step of the
// chain at a time (the Rust library's decode_chain).
type decoder interface {
	decodeChain(toks []string) []string
}

type byteLevelDec struct{}

func (byteLevelDec) decodeChain(toks []string) []string {
	var b []byte
	for _, t := range toks {
		b = byteLevelDecode(t, b)
	}
	return []string{lossyUTF8(b)}
}

type replaceDec struct {
	pat     pattern
	content string
}

func (r replaceDec) decodeChain(toks []string) []string {
	n := replace(r)
	for i, t := range toks {
		toks[i] = n.normalize(t)
	}
	return toks
}

type byteFallbackDec struct{}

func (byteFallbackDec) decodeChain(toks []string) []string {
	out := make([]string, 0, len(toks))
	var pend []byte
	flush := func() {
		if len(pend) == 0 {
			return
		}
		if utf8.Valid(pend) {
			out = append(out, string(pend))
		} else {
			for range pend {
				out = append(out, "\uFFFD")
			}
		}
		pend = pend[:0]
	}
	for _, t := range toks {
		if len(t) == 6 && strings.HasPrefix(t, "<0x") && t[5] == '>' {
			if v, err := strconv.ParseUint(t[3:5], 16, 8); err == nil {
				pend = append(pend, byte(v))
				continue
			}
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

type fuseDec struct{}

func (fuseDec) decodeChain(toks []string) []string { return []string{strings.Join(toks, "")} }

type stripDec struct {
	content     rune
	start, stop int
}

func (s stripDec) decodeChain(toks []string) []string {
	for i, t := range toks {
		rs := []rune(t)
		a := 0
		for j := 0; j < s.start && j < len(rs) && rs[j] == s.content; j++ {
			a = j + 1
		}
		b := len(rs)
		for j := 0; j < s.stop; j++ {
			k := len(rs) - j - 1
			if k < a || rs[k] != s.content {
				break
			}
			b = k
		}
		toks[i] = string(rs[a:b])
	}
	return toks
}

type metaspaceDec struct {
	replacement rune
	prepend     bool
}

func (m metaspaceDec) decodeChain(toks []string) []string {
	for i, t := range toks {
		var b strings.Builder
		for _, c := range t {
			if c == m.replacement {
				if i == 0 && m.prepend {
					continue
				}
				c = ' '
			}
			b.WriteRune(c)
		}
		toks[i] = b.String()
	}
	return toks
}

type decSequence []decoder

func (q decSequence) decodeChain(toks []string) []string {
	for _, d := range q {
		toks = d.decodeChain(toks)
	}
	return toks
}

// parseDecoder builds a decoder from its tokenizer.json form; a nil result
// means none (tokens are joined with spaces).
func parseDecoder(raw json.RawMessage) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := componentType(raw)
	if err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	switch typ {
	case "ByteLevel":
		var v struct {
			Type           string `json:"type"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
			TrimOffsets    bool   `json:"trim_offsets"`
			UseRegex       bool   `json:"use_regex"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("decoder ByteLevel: %w", err)
		}
		return byteLevelDec{}, nil
	case "Replace":
		var v struct {
			Type    string      `json:"type"`
			Pattern patternJSON `json:"pattern"`
			Content string      `json:"content"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("decoder Replace: %w", err)
		}
		p, err := parsePattern(v.Pattern)
		if err != nil {
			return nil, fmt.Errorf("decoder Replace: %w", err)
		}
		return replaceDec{pat: p, content: v.Content}, nil
	case "ByteFallback":
		return byteFallbackDec{}, nil
	case "Fuse":
		return fuseDec{}, nil
	case "Strip":
		var v struct {
			Type    string `json:"type"`
			Content string `json:"content"`
			Start   int    `json:"start"`
			Stop    int    `json:"stop"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("decoder Strip: %w", err)
		}
		rs := []rune(v.Content)
		if len(rs) != 1 {
			return nil, fmt.Errorf("decoder Strip: content must be one character, got %q", v.Content)
		}
		return stripDec{content: rs[0], start: v.Start, stop: v.Stop}, nil
	case "Metaspace":
		var v struct {
			Type           string  `json:"type"`
			Replacement    string  `json:"replacement"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
			PrependScheme  *string `json:"prepend_scheme"`
			Split          *bool   `json:"split"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("decoder Metaspace: %w", err)
		}
		rs := []rune(v.Replacement)
		if len(rs) != 1 {
			return nil, fmt.Errorf("decoder Metaspace: replacement must be one character, got %q", v.Replacement)
		}
		prep := true
		if v.PrependScheme != nil {
			prep = *v.PrependScheme != "never"
		} else if v.AddPrefixSpace != nil {
			prep = *v.AddPrefixSpace
		}
		return metaspaceDec{replacement: rs[0], prepend: prep}, nil
	case "Sequence":
		var v struct {
			Type     string            `json:"type"`
			Decoders []json.RawMessage `json:"decoders"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("decoder Sequence: %w", err)
		}
		seq := make(decSequence, 0, len(v.Decoders))
		for i, r := range v.Decoders {
			d, err := parseDecoder(r)
			if err != nil {
				return nil, fmt.Errorf("decoder Sequence[%d]: %w", i, err)
			}
			if d != nil {
				seq = append(seq, d)
			}
		}
		return seq, nil
	default:
		return nil, fmt.Errorf("decoder %q is not supported", typ)
	}
}
