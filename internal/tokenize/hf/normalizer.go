package hf

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a segment of text before pre-tokenization.
type normalizer interface {
	normalize(s string) string
}

type unicodeNorm struct{ form norm.Form }

func (n unicodeNorm) normalize(s string) string { return n.form.String(s) }

type lowercase struct{}

// normalize lowercases per character like Rust's char::to_lowercase: no
// context (final sigma stays σ), and U+0130 becomes "i\u0307".
func (lowercase) normalize(s string) string {
	return strings.Map(func(c rune) rune { return unicode.ToLower(c) }, strings.ReplaceAll(s, "\u0130", "i\u0307"))
}

// prepend adds a prefix to a non-empty segment.
type prepend struct{ prefix string }

func (p prepend) normalize(s string) string {
	if s == "" {
		return s
	}
	return p.prefix + s
}

// replace substitutes every match of a pattern.
type replace struct {
	pat     pattern
	content string
}

func (r replace) normalize(s string) string {
	ms := r.pat.findAll(s, nil)
	if len(ms) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(ms)*len(r.content))
	prev := 0
	for _, m := range ms {
		b.WriteString(s[prev:m[0]])
		b.WriteString(r.content)
		prev = m[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}

// strip removes leading and/or trailing white space.
type strip struct{ left, right bool }

func (st strip) normalize(s string) string {
	if st.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if st.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

type normSequence []normalizer

func (q normSequence) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// parseNormalizer builds a normalizer from its tokenizer.json form; a nil
// result means none.
func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := componentType(raw)
	if err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch typ {
	case "NFC":
		return unicodeNorm{norm.NFC}, nil
	case "NFD":
		return unicodeNorm{norm.NFD}, nil
	case "NFKC":
		return unicodeNorm{norm.NFKC}, nil
	case "NFKD":
		return unicodeNorm{norm.NFKD}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "Prepend":
		var v struct {
			Type    string `json:"type"`
			Prepend string `json:"prepend"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Prepend: %w", err)
		}
		return prepend{v.Prepend}, nil
	case "Replace":
		var v struct {
			Type    string      `json:"type"`
			Pattern patternJSON `json:"pattern"`
			Content string      `json:"content"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		p, err := parsePattern(v.Pattern)
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		return replace{pat: p, content: v.Content}, nil
	case "Strip":
		var v struct {
			Type       string `json:"type"`
			StripLeft  bool   `json:"strip_left"`
			StripRight bool   `json:"strip_right"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Strip: %w", err)
		}
		return strip{left: v.StripLeft, right: v.StripRight}, nil
	case "Sequence":
		var v struct {
			Type        string            `json:"type"`
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Sequence: %w", err)
		}
		seq := make(normSequence, 0, len(v.Normalizers))
		for i, r := range v.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizer Sequence[%d]: %w", i, err)
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		if len(seq) == 0 {
			return nil, nil
		}
		if len(seq) == 1 {
			return seq[0], nil
		}
		return seq, nil
	default:
		return nil, fmt.Errorf("normalizer %q is not supported", typ)
	}
}

// parsePattern builds a pattern from {"String": ...} or {"Regex": ...}.
func parsePattern(p patternJSON) (pattern, error) {
	switch {
	case p.String != nil && p.Regex == nil:
		return literal(*p.String), nil
	case p.Regex != nil && p.String == nil:
		return compileRegex(*p.Regex)
	default:
		return nil, fmt.Errorf("pattern must have exactly one of String or Regex")
	}
}
