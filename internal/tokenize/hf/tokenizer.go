package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ErrInvalidUTF8 is returned by Encode for text that is not valid UTF-8 (the
// Rust library only accepts valid strings).
var ErrInvalidUTF8 = errors.New("text is not valid UTF-8")

// maxCachedWordLen is the longest pre-tokenized word, in bytes, kept in the
// word cache (the Rust library uses the same bound for its BPE cache).
const maxCachedWordLen = 256

// Config tunes a Tokenizer. The zero value is usable: zero sizes mean the
// defaults, negative sizes turn a cache off.
type Config struct {
	// SegmentCacheBytes bounds the cache of segment ids (text between added
	// tokens). Default 32 MiB; negative turns this cache off.
	SegmentCacheBytes int64
	// WordCacheBytes bounds the cache of BPE ids of pre-tokenized words
	// (words of up to 256 bytes). Default 8 MiB; negative turns this cache
	// off.
	WordCacheBytes int64
	// DisableCache turns both caches off.
	DisableCache bool
	// Transformers makes Encode(text, true) add the special tokens that
	// Hugging Face transformers (and so vLLM and SGLang) adds rather than the
	// ones tokenizer.json's post-processor adds. They differ for the Llama and
	// Gemma tokenizer classes, whose fast tokenizers replace the
	// post-processor with BOS (add_bos_token, default true) + text + EOS
	// (add_eos_token, default false) from tokenizer_config.json: DeepSeek V3,
	// for one, ships a post-processor without BOS but gets one from
	// transformers. Only Load and LoadWithConfig read tokenizer_config.json;
	// without it this has no effect.
	Transformers bool
}

// Default cache sizes.
const (
	DefaultSegmentCacheBytes = 32 << 20
	DefaultWordCacheBytes    = 8 << 20
)

// withDefaults returns c with zero sizes replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.SegmentCacheBytes == 0 {
		c.SegmentCacheBytes = DefaultSegmentCacheBytes
	}
	if c.WordCacheBytes == 0 {
		c.WordCacheBytes = DefaultWordCacheBytes
	}
	return c
}

// maxCacheBytes bounds each cache to something a machine can hold.
const maxCacheBytes = 1 << 40

// Validate reports every invalid field of c.
func (c Config) Validate() error {
	var errs []error
	if c.SegmentCacheBytes > maxCacheBytes {
		errs = append(errs, fmt.Errorf("segment_cache_bytes must be <= %d, got %d", int64(maxCacheBytes), c.SegmentCacheBytes))
	}
	if c.WordCacheBytes > maxCacheBytes {
		errs = append(errs, fmt.Errorf("word_cache_bytes must be <= %d, got %d", int64(maxCacheBytes), c.WordCacheBytes))
	}
	return errors.Join(errs...)
}

// Tokenizer encodes and decodes text as a Hugging Face tokenizer.json does.
// It is safe for concurrent use.
type Tokenizer struct {
	model     *bpe
	norm      normalizer
	pre       preTokenizer
	preFirst  preTokenizer // for the piece at offset 0 of the input; nil unless Metaspace prepend_scheme is "first"
	post      *postProcessor
	dec       decoder
	rawAdded  *matcher // added tokens matched on raw text
	normAdded *matcher // added tokens matched on normalized text

	added     map[string]uint32 // content -> id
	addedByID map[uint32]addedToken
	vocabSize int

	special SpecialTokens

	segCache  *idCache
	wordCache *idCache
	scratch   sync.Pool // *encodeScratch
}

type encodeScratch struct {
	bpe    bpeScratch
	pieces []piece
	words  []string
}

// Load reads tokenizer.json from dir, and tokenizer_config.json and
// generation_config.json when present (for BOS and EOS tokens).
func Load(dir string) (*Tokenizer, error) {
	return LoadWithConfig(dir, Config{})
}

// LoadWithConfig is Load with a Config (cache sizes, Transformers).
func LoadWithConfig(dir string, cfg Config) (*Tokenizer, error) {
	t, err := loadFile(filepath.Join(dir, "tokenizer.json"), cfg)
	if err != nil {
		return nil, err
	}
	if err := t.loadConfigs(dir, cfg.Transformers); err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", dir, err)
	}
	return t, nil
}

// LoadFile reads a tokenizer.json file alone (no BOS/EOS information beyond
// what the file itself says).
func LoadFile(tokenizerJSON string) (*Tokenizer, error) {
	return loadFile(tokenizerJSON, Config{})
}

func loadFile(path string, cfg Config) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := New(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return t, nil
}

// New builds a Tokenizer from the contents of a tokenizer.json file. It
// refuses any component it does not implement.
func New(tokenizerJSON []byte, cfg Config) (*Tokenizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg = cfg.withDefaults()
	var f fileJSON
	if err := json.Unmarshal(tokenizerJSON, &f); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	t := &Tokenizer{}
	var err error
	if t.model, err = parseModel(f.Model); err != nil {
		return nil, err
	}
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if t.preFirst, err = withFirstVariant(t.pre); err != nil {
		return nil, err
	}
	if t.post, err = parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if t.dec, err = parseDecoder(f.Decoder); err != nil {
		return nil, err
	}
	if bl := finalByteLevel(t.pre); bl != nil && t.model.enableRawBytes() {
		bl.raw = true
	}
	if err := t.setAddedTokens(f.AddedTokens); err != nil {
		return nil, err
	}
	if !cfg.DisableCache {
		t.segCache = newIDCache(cfg.SegmentCacheBytes)
		t.wordCache = newIDCache(cfg.WordCacheBytes)
	}
	t.scratch.New = func() any { return new(encodeScratch) }
	return t, nil
}

// setAddedTokens registers the added tokens and builds their matchers.
func (t *Tokenizer) setAddedTokens(list []addedTokenJSON) error {
	t.added = make(map[string]uint32, len(list))
	t.addedByID = make(map[uint32]addedToken, len(list))
	raw := map[string]uint32{}
	normed := map[string]uint32{}
	flags := map[uint32]addedToken{}
	t.vocabSize = len(t.model.idToTok)
	for i, a := range list {
		if a.Content == "" {
			continue
		}
		normalized := !a.Special
		if a.Normalized != nil {
			normalized = *a.Normalized
		}
		id := a.ID
		if vid, ok := t.model.vocab[a.Content]; ok {
			id = vid // the Rust library prefers the model's id
		}
		if int64(id) >= int64(len(t.model.idToTok))+int64(len(list))+1<<16 {
			return fmt.Errorf("added_tokens[%d] %q: id %d is far beyond the vocabulary", i, a.Content, id)
		}
		tok := addedToken{id: id, content: a.Content, special: a.Special, normalized: normalized,
			singleWord: a.SingleWord, lstrip: a.LStrip, rstrip: a.RStrip}
		if tok.singleWord || tok.lstrip || tok.rstrip {
			flags[id] = tok
		}
		t.added[a.Content] = id
		t.addedByID[id] = tok
		t.vocabSize = max(t.vocabSize, int(id)+1)
		if normalized {
			p := a.Content
			if t.norm != nil {
				p = t.norm.normalize(p)
			}
			normed[p] = id
		} else {
			raw[a.Content] = id
		}
	}
	t.rawAdded = newMatcher(raw, flags)
	t.normAdded = newMatcher(normed, flags)
	return nil
}

// Encode returns the ids of text, as the Rust library's
// encode(text, add_special_tokens).ids does.
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) ([]uint32, error) {
	if !validUTF8(text) {
		return nil, fmt.Errorf("encode: %w", ErrInvalidUTF8)
	}
	sc := t.scratch.Get().(*encodeScratch)
	defer t.scratch.Put(sc)
	ids := make([]uint32, 0, len(text)/3+4)
	segs := t.rawAdded.split(text, sc.pieces[:0])
	sc.pieces = segs[:0]
	for i, s := range segs {
		if s.isToken {
			ids = append(ids, s.id)
			continue
		}
		ids = t.encodeSegment(s.text, i == 0 && t.preFirst != nil, ids, sc)
	}
	clear(segs) // drop references to text
	if addSpecialTokens {
		ids = t.post.apply(ids)
	}
	return ids, nil
}

// encodeSegment appends the ids of a text segment without raw added tokens;
// atStart says the segment starts the input and the pre-tokenizer treats
// that place differently (Metaspace's prepend_scheme "first").
func (t *Tokenizer) encodeSegment(seg string, atStart bool, dst []uint32, sc *encodeScratch) []uint32 {
	key := seg
	if t.preFirst != nil {
		// The same text encodes differently at the start: keep the two
		// apart in the cache.
		if atStart {
			key = "\x01" + seg
		} else {
			key = "\x00" + seg
		}
	}
	if ids, ok := t.segCache.get(key); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	n := seg
	if t.norm != nil {
		n = t.norm.normalize(seg)
	}
	var parts []piece
	if t.normAdded != nil {
		parts = t.normAdded.split(n, nil)
	} else if n != "" {
		parts = []piece{{text: n}}
	}
	for i, p := range parts {
		if p.isToken {
			dst = append(dst, p.id)
			continue
		}
		words := sc.words[:0]
		switch {
		case atStart && i == 0:
			words = t.preFirst.split(p.text, words)
		case t.pre != nil:
			words = t.pre.split(p.text, words)
		default:
			words = append(words, p.text)
		}
		for _, w := range words {
			dst = t.encodeWord(w, dst, sc)
		}
		clear(words)
		sc.words = words[:0]
	}
	t.segCache.put(key, dst[start:])
	return dst
}

// encodeWord appends the model ids of one pre-tokenized word.
func (t *Tokenizer) encodeWord(w string, dst []uint32, sc *encodeScratch) []uint32 {
	if len(w) > maxCachedWordLen || t.wordCache == nil {
		return t.model.tokenize(w, dst, &sc.bpe)
	}
	if ids, ok := t.wordCache.get(w); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = t.model.tokenize(w, dst, &sc.bpe)
	t.wordCache.put(w, dst[start:])
	return dst
}

// Decode returns the text of ids, as the Rust library's
// decode(ids, skip_special_tokens) does: unknown ids are skipped.
func (t *Tokenizer) Decode(ids []uint32, skipSpecialTokens bool) (string, error) {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if a, ok := t.addedByID[id]; ok {
			if skipSpecialTokens && a.special {
				continue
			}
			toks = append(toks, a.content)
			continue
		}
		tok, ok := t.model.token(id)
		if !ok {
			continue
		}
		if skipSpecialTokens {
			if a, ok := t.addedByID[t.added[tok]]; ok && a.special && a.content == tok {
				continue
			}
		}
		toks = append(toks, tok)
	}
	if t.dec == nil {
		return strings.Join(toks, " "), nil
	}
	return strings.Join(t.dec.decodeChain(toks), ""), nil
}

// TokenID returns the id of a token string (an added token or a vocabulary
// entry).
func (t *Tokenizer) TokenID(tok string) (uint32, bool) {
	if id, ok := t.added[tok]; ok {
		return id, true
	}
	id, ok := t.model.vocab[tok]
	return id, ok
}

// IDToken returns the token string of id.
func (t *Tokenizer) IDToken(id uint32) (string, bool) {
	if a, ok := t.addedByID[id]; ok {
		return a.content, true
	}
	return t.model.token(id)
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id uint32) bool {
	a, ok := t.addedByID[id]
	return ok && a.special
}

// VocabSize returns one more than the largest id of the vocabulary and the
// added tokens, the size an array indexed by token id needs.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// CacheStats are the counters of the Encode caches.
type CacheStats struct {
	SegmentHits, SegmentMisses uint64
	SegmentEntries             int
	SegmentBytes               int64
	WordHits, WordMisses       uint64
	WordEntries                int
	WordBytes                  int64
}

// CacheStats returns the current cache counters.
func (t *Tokenizer) CacheStats() CacheStats {
	var s CacheStats
	s.SegmentHits, s.SegmentMisses, s.SegmentEntries, s.SegmentBytes = t.segCache.stats()
	s.WordHits, s.WordMisses, s.WordEntries, s.WordBytes = t.wordCache.stats()
	return s
}
