package hf

import (
	"fmt"
	"strings"
	"sync"
)

// preTokenizer cuts normalized text into words; the model then encodes each
// word on its own. Pre-tokenizers compose: each one maps every word of the
// previous one to zero or more words.
type preTokenizer interface {
	// split appends the words of w to dst; empty words must not be added.
	split(w string, dst []string) []string
}

// splitBehavior says what happens to the matches of a Split pattern.
type splitBehavior int

const (
	splitRemoved splitBehavior = iota
	splitIsolated
	splitMergedWithPrevious
	splitMergedWithNext
	splitContiguous
)

func parseSplitBehavior(s string) (splitBehavior, error) {
	switch s {
	case "Removed":
		return splitRemoved, nil
	case "Isolated":
		return splitIsolated, nil
	case "MergedWithPrevious":
		return splitMergedWithPrevious, nil
	case "MergedWithNext":
		return splitMergedWithNext, nil
	case "Contiguous":
		return splitContiguous, nil
	default:
		return 0, fmt.Errorf("split behavior %q is not supported", s)
	}
}

// splitPre is the Split pre-tokenizer.
type splitPre struct {
	pat      pattern
	behavior splitBehavior
	invert   bool
}

// span is a byte range of a word and whether it is a pattern match.
type span struct {
	start, end int
	match      bool
}

// matchBufs recycles the match slices of splitPre.split.
var matchBufs = sync.Pool{New: func() any { b := make([][2]int, 0, 64); return &b }}

func (p *splitPre) split(w string, dst []string) []string {
	if w == "" {
		return dst
	}
	bp := matchBufs.Get().(*[][2]int)
	defer matchBufs.Put(bp)
	ms := p.pat.findAll(w, (*bp)[:0])
	*bp = ms[:0]
	if p.behavior == splitIsolated {
		// Every match and every gap between matches is a word.
		prev := 0
		for _, m := range ms {
			if prev < m[0] {
				dst = append(dst, w[prev:m[0]])
			}
			dst = append(dst, w[m[0]:m[1]])
			prev = m[1]
		}
		if prev < len(w) {
			dst = append(dst, w[prev:])
		}
		return dst
	}
	// Cover the whole word with alternating non-match / match spans.
	spans := make([]span, 0, 2*len(ms)+1)
	prev := 0
	for _, m := range ms {
		if prev < m[0] {
			spans = append(spans, span{prev, m[0], p.invert})
		}
		spans = append(spans, span{m[0], m[1], !p.invert})
		prev = m[1]
	}
	if prev < len(w) {
		spans = append(spans, span{prev, len(w), p.invert})
	}
	emit := func(s, e int) {
		if s < e {
			dst = append(dst, w[s:e])
		}
	}
	switch p.behavior {
	case splitIsolated:
		for _, s := range spans {
			emit(s.start, s.end)
		}
	case splitRemoved:
		for _, s := range spans {
			if !s.match {
				emit(s.start, s.end)
			}
		}
	case splitContiguous:
		for i := 0; i < len(spans); {
			j := i + 1
			for j < len(spans) && spans[j].match == spans[i].match {
				j++
			}
			emit(spans[i].start, spans[j-1].end)
			i = j
		}
	case splitMergedWithPrevious:
		// A match joins the piece before it, unless that piece is a match.
		var out [][2]int
		prevMatch := false
		for _, s := range spans {
			if s.match && !prevMatch && len(out) > 0 {
				out[len(out)-1][1] = s.end
			} else {
				out = append(out, [2]int{s.start, s.end})
			}
			prevMatch = s.match
		}
		for _, o := range out {
			emit(o[0], o[1])
		}
	case splitMergedWithNext:
		// A match joins the piece after it, unless that piece is a match.
		out := make([][2]int, 0, len(spans))
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if s.match && !prevMatch && len(out) > 0 {
				out[len(out)-1][0] = s.start
			} else {
				out = append(out, [2]int{s.start, s.end})
			}
			prevMatch = s.match
		}
		for i := len(out) - 1; i >= 0; i-- {
			emit(out[i][0], out[i][1])
		}
	}
	return dst
}

// gpt2Pattern is the regex of the ByteLevel pre-tokenizer's use_regex option.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// byteLevelPre maps every byte of a word to a printable character (GPT-2's
// byte-to-unicode table), optionally after a space prefix and a regex split.
type byteLevelPre struct {
	addPrefixSpace bool
	re             *splitPre // nil unless use_regex
	// raw skips the byte-to-character mapping: set when this is the last
	// pre-tokenizer and the model works on raw bytes instead (see
	// bpe.enableRawBytes), which gives the same ids.
	raw bool
}

func (b *byteLevelPre) split(w string, dst []string) []string {
	if w == "" {
		return dst
	}
	if b.addPrefixSpace && !strings.HasPrefix(w, " ") {
		w = " " + w
	}
	start := len(dst)
	if b.re != nil {
		dst = b.re.split(w, dst)
	} else {
		dst = append(dst, w)
	}
	if !b.raw {
		for i := start; i < len(dst); i++ {
			dst[i] = byteLevelEncode(dst[i])
		}
	}
	return dst
}

// finalByteLevel returns the ByteLevel pre-tokenizer that runs last in p, or
// nil.
func finalByteLevel(p preTokenizer) *byteLevelPre {
	switch v := p.(type) {
	case *byteLevelPre:
		return v
	case preSequence:
		if len(v) > 0 {
			return finalByteLevel(v[len(v)-1])
		}
	}
	return nil
}

// metaspacePre replaces spaces with a marker (usually "▁"), may prepend it,
// and may split before each marker.
type metaspacePre struct {
	replacement string
	prependAll  bool
	// prependFirst is prepend_scheme "first": prepend only to the word that
	// starts the whole input. The tokenizer handles it with a second chain
	// (see withFirstVariant); this one never prepends.
	prependFirst bool
	splitWords   bool
}

func (m *metaspacePre) split(w string, dst []string) []string {
	if w == "" {
		return dst
	}
	w = strings.ReplaceAll(w, " ", m.replacement)
	if m.prependAll && !strings.HasPrefix(w, m.replacement) {
		w = m.replacement + w
	}
	if !m.splitWords {
		return append(dst, w)
	}
	sp := splitPre{pat: literal(m.replacement), behavior: splitMergedWithNext}
	return sp.split(w, dst)
}

type preSequence []preTokenizer

func (q preSequence) split(w string, dst []string) []string {
	cur := []string{w}
	var next []string
	for _, p := range q {
		next = next[:0]
		for _, x := range cur {
			next = p.split(x, next)
		}
		cur, next = next, cur
	}
	return append(dst, cur...)
}

// withFirstVariant handles Metaspace's prepend_scheme "first", which
// prepends the marker only to the word at offset 0 of the whole input. It
// returns the chain to use for the piece that starts the input (the same
// chain with that Metaspace prepending), or nil when p has no such
// Metaspace. It is supported only as the first pre-tokenizer, whose input is
// the piece itself.
func withFirstVariant(p preTokenizer) (preTokenizer, error) {
	always := func(m *metaspacePre) *metaspacePre {
		c := *m
		c.prependFirst, c.prependAll = false, true
		return &c
	}
	var bad bool
	var walk func(p preTokenizer, first bool) preTokenizer
	walk = func(p preTokenizer, first bool) preTokenizer {
		switch v := p.(type) {
		case *metaspacePre:
			if !v.prependFirst {
				return nil
			}
			if !first {
				bad = true
				return nil
			}
			return always(v)
		case preSequence:
			var out preTokenizer
			for i, q := range v {
				if r := walk(q, first && i == 0); r != nil {
					c := append(preSequence(nil), v...)
					c[i] = r
					out = c
				}
			}
			return out
		}
		return nil
	}
	out := walk(p, true)
	if bad {
		return nil, fmt.Errorf("pre_tokenizer Metaspace: prepend_scheme \"first\" is supported only as the first pre-tokenizer")
	}
	return out, nil
}
