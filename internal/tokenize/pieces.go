package tokenize

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
)

// addedToken is one entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID         uint32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

func readAddedTokens(path string) ([]addedToken, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// added_tokens comes near the top of tokenizer.json: stream the
	// top-level keys and stop there instead of parsing the whole vocabulary.
	dec := json.NewDecoder(bufio.NewReader(f))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("parse %s: not a JSON object", path)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		if key == "added_tokens" {
			var added []addedToken
			if err := dec.Decode(&added); err != nil {
				return nil, fmt.Errorf("parse %s: added_tokens: %w", path, err)
			}
			return added, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
	}
	return nil, nil
}

// pieceEncoder encodes text as the concatenation of its pieces: the plain
// added tokens (special tokens such as <|eot_id|>, which the tokenizer
// matches before anything else) and the text between them, each encoded
// on its own and cached when long. Hugging Face tokenizers cut the input at
// added tokens before normalizing, so the pieces are independent; Load
// checks that with probe strings and falls back to whole-text encoding
// (still cached) for a tokenizer where they are not.
type pieceEncoder struct {
	enc      Encoder
	tokens   []addedToken // plain added tokens, longest first
	first    [256]bool    // first bytes of tokens
	split    bool         // pieces are independent
	wrap     bool         // Encode(s, true) == prefix + Encode(s, false) + suffix
	prefix   []uint32
	suffix   []uint32
	cache    *pieceCache
	minPiece int
}

func newPieceEncoder(enc Encoder, added []addedToken, opts Options, met *cacheMetrics) *pieceEncoder {
	p := &pieceEncoder{enc: enc, minPiece: opts.CacheMinPieceBytes}
	if opts.CacheBytes > 0 {
		p.cache = newPieceCache(opts.CacheBytes, met)
	}
	for _, t := range added {
		if t.Content == "" || t.SingleWord || t.LStrip || t.RStrip || t.Normalized {
			continue
		}
		p.tokens = append(p.tokens, t)
	}
	sort.SliceStable(p.tokens, func(i, j int) bool { return len(p.tokens[i].Content) > len(p.tokens[j].Content) })
	for _, t := range p.tokens {
		p.first[t.Content[0]] = true
	}
	p.split = len(p.tokens) > 0 && p.checkSplit()
	p.wrap = p.checkWrap()
	return p
}

var probes = [][2]string{
	{"hello", " world"}, {"x\n", "\n y"}, {"", " a"}, {" ", "b "}, {"日本", "語 "},
	{"a  ", "  b"}, {"\n\n", "\t"}, {"The", "The"},
}

// checkSplit reports whether, for this tokenizer, encoding a + T + b equals
// encoding a, then T, then b, for a few probes and special tokens T.
func (p *pieceEncoder) checkSplit() bool {
	n := min(len(p.tokens), 4)
	for _, t := range p.tokens[:n] {
		for _, pr := range probes {
			whole, err := p.enc.Encode(pr[0]+t.Content+pr[1], false)
			if err != nil {
				return false
			}
			a, err1 := p.enc.Encode(pr[0], false)
			b, err2 := p.enc.Encode(pr[1], false)
			if err1 != nil || err2 != nil {
				return false
			}
			parts := append(append(append([]uint32{}, a...), t.ID), b...)
			if !slices.Equal(whole, parts) {
				return false
			}
		}
	}
	return true
}

// checkWrap finds the ids the post-processor adds around a text and checks
// that they do not depend on the text.
func (p *pieceEncoder) checkWrap() bool {
	with, err1 := p.enc.Encode("hello world", true)
	without, err2 := p.enc.Encode("hello world", false)
	if err1 != nil || err2 != nil || len(without) == 0 {
		return false
	}
	i := indexOf(with, without)
	if i < 0 {
		return false
	}
	p.prefix = slices.Clone(with[:i])
	p.suffix = slices.Clone(with[i+len(without):])
	for _, pr := range probes {
		s := pr[0] + pr[1]
		w, err1 := p.enc.Encode(s, true)
		wo, err2 := p.enc.Encode(s, false)
		if err1 != nil || err2 != nil {
			return false
		}
		if !slices.Equal(w, p.wrapIDs(wo)) {
			return false
		}
	}
	return true
}

func (p *pieceEncoder) wrapIDs(ids []uint32) []uint32 {
	out := make([]uint32, 0, len(p.prefix)+len(ids)+len(p.suffix))
	out = append(out, p.prefix...)
	out = append(out, ids...)
	return append(out, p.suffix...)
}

func indexOf(s, sub []uint32) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// encode tokenizes text, using the piece cache where it is exact.
func (p *pieceEncoder) encode(text string, addSpecial bool) ([]uint32, error) {
	if addSpecial && !p.wrap {
		return p.enc.Encode(text, true)
	}
	var ids []uint32
	var err error
	if p.split {
		ids, err = p.encodeSplit(text)
	} else {
		ids, err = p.encodePiece(nil, text)
	}
	if err != nil {
		return nil, err
	}
	if addSpecial {
		return p.wrapIDs(ids), nil
	}
	return ids, nil
}

func (p *pieceEncoder) encodeSplit(text string) ([]uint32, error) {
	out := make([]uint32, 0, len(text)/3+8)
	start := 0
	var err error
	for i := 0; i < len(text); i++ {
		if !p.first[text[i]] {
			continue
		}
		t, ok := p.matchAt(text, i)
		if !ok {
			continue
		}
		if i > start {
			if out, err = p.encodePiece(out, text[start:i]); err != nil {
				return nil, err
			}
		}
		out = append(out, t.ID)
		i += len(t.Content) - 1
		start = i + 1
	}
	if start < len(text) {
		if out, err = p.encodePiece(out, text[start:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// matchAt returns the longest plain added token starting at text[i].
func (p *pieceEncoder) matchAt(text string, i int) (addedToken, bool) {
	for _, t := range p.tokens {
		if len(text)-i >= len(t.Content) && text[i:i+len(t.Content)] == t.Content {
			return t, true
		}
	}
	return addedToken{}, false
}

func (p *pieceEncoder) encodePiece(dst []uint32, piece string) ([]uint32, error) {
	if p.cache == nil || len(piece) < p.minPiece {
		ids, err := p.enc.Encode(piece, false)
		if err != nil {
			return nil, err
		}
		return append(dst, ids...), nil
	}
	if ids, ok := p.cache.get(piece); ok {
		return append(dst, ids...), nil
	}
	ids, err := p.enc.Encode(piece, false)
	if err != nil {
		return nil, err
	}
	p.cache.add(piece, ids)
	return append(dst, ids...), nil
}
