package kvblock

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// DefaultBytesPerToken is the text bytes a token is assumed to stand for when
// no tokenizer counts them: about four for English with the BPE vocabularies
// of current models (docs/routing.md#text-prefix-identity).
const DefaultBytesPerToken = 4

// TextSeed returns the seed of a text prefix identity for a model, LoRA
// adapter and cache_salt. It differs from NewSeed's for the same names, so a
// text chunk's hash never names an engine block.
func TextSeed(model, lora, cacheSalt string) Hash {
	buf := make([]byte, 0, 3*4+len(model)+len(lora)+len(cacheSalt)+len("inferrail/kvblock/text/v1"))
	buf = append(buf, "inferrail/kvblock/text/v1"...)
	for _, s := range [...]string{model, lora, cacheSalt} {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	return Hash(xxh3.Hash(buf))
}

// TextHasher computes the text prefix identity of a prompt the router cannot
// tokenize: the prompt's rendered bytes, written in order, are cut into
// chunks of a fixed number of bytes and the chunks are hashed chained, as
// Hashes does with token blocks:
//
//	h[0] = xxh3(seed, text[0:chunk])
//	h[i] = xxh3(h[i-1], text[i*chunk:(i+1)*chunk])
//
// Only full chunks are hashed. A chunk's hash therefore names the whole text
// before it, and two prompts that share their first k×chunk bytes share their
// first k hashes. A chunk stands in for one KV block, so chunk is usually the
// block size times the bytes a token is assumed to take. The zero value is
// not usable; call Reset. Not safe for concurrent use.
type TextHasher struct {
	h      Hash
	chunk  int
	buf    []byte // the partial chunk
	hashes []Hash
	n      int // bytes written
}

// Reset starts a new prompt with seed (TextSeed) and chunk bytes (at least 1),
// appending its hashes to dst.
func (t *TextHasher) Reset(dst []Hash, seed Hash, chunk int) {
	t.h, t.chunk, t.hashes, t.n = seed, max(chunk, 1), dst, 0
	if cap(t.buf) < t.chunk {
		t.buf = make([]byte, 0, t.chunk)
	}
	t.buf = t.buf[:0]
}

// Write adds p to the prompt's text.
func (t *TextHasher) Write(p []byte) {
	t.n += len(p)
	if len(t.buf) > 0 {
		k := min(t.chunk-len(t.buf), len(p))
		t.buf = append(t.buf, p[:k]...)
		p = p[k:]
		if len(t.buf) < t.chunk {
			return
		}
		t.next(t.buf)
		t.buf = t.buf[:0]
	}
	for len(p) >= t.chunk {
		t.next(p[:t.chunk])
		p = p[t.chunk:]
	}
	t.buf = append(t.buf, p...)
}

// WriteString adds s to the prompt's text.
func (t *TextHasher) WriteString(s string) {
	var stack [256]byte
	for len(s) > 0 {
		k := copy(stack[:], s)
		t.Write(stack[:k])
		s = s[k:]
	}
}

// WriteByte adds one byte to the prompt's text. It never fails.
func (t *TextHasher) WriteByte(c byte) error {
	t.Write([]byte{c})
	return nil
}

func (t *TextHasher) next(chunk []byte) {
	t.h = Hash(xxh3.HashSeed(chunk, uint64(t.h)))
	t.hashes = append(t.hashes, t.h)
}

// Hashes returns dst (from Reset) with the hashes of every full chunk written
// so far.
func (t *TextHasher) Hashes() []Hash { return t.hashes }

// Len returns the bytes written since Reset.
func (t *TextHasher) Len() int { return t.n }

// TextHashes returns dst with the text prefix identity of text (see
// TextHasher).
func TextHashes(dst []Hash, seed Hash, text []byte, chunk int) []Hash {
	var t TextHasher
	t.Reset(dst, seed, chunk)
	t.Write(text)
	return t.Hashes()
}
