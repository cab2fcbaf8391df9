package bench

import (
	"encoding/binary"
	"strings"

	"github.com/zeebo/xxh3"
)

// Deterministic prompt text. Every word is two lower-case letters and a space:
// three bytes that the builtin:sim tokenizer always cuts into exactly one token
// when the word starts on a token boundary (after whitespace or a special
// token, as at the start of a chat message). So n words are n tokens, and two
// texts that share their first k words share their first k tokens.

// wordBytes is the length of one word, in bytes.
const wordBytes = 3

// word writes the word for (key, i) into b.
func word(b []byte, key uint64, i int) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(i))
	h := xxh3.HashSeed(buf[:], key)
	b[0] = 'a' + byte(h%26)
	b[1] = 'a' + byte((h>>8)%26)
	b[2] = ' '
}

// appendWords appends n words derived from key to sb.
func appendWords(sb *strings.Builder, key uint64, n int) {
	var b [wordBytes]byte
	sb.Grow(n * wordBytes)
	for i := range n {
		word(b[:], key, i)
		sb.Write(b[:])
	}
}

// words returns n words derived from key.
func words(key uint64, n int) string {
	var sb strings.Builder
	appendWords(&sb, key, n)
	return sb.String()
}

// textKey derives a text key from a namespace and numbers, so different
// workloads, seeds and items never share text by accident.
func textKey(ns string, parts ...uint64) uint64 {
	buf := make([]byte, 0, len(ns)+8*len(parts))
	buf = append(buf, ns...)
	for _, p := range parts {
		buf = binary.LittleEndian.AppendUint64(buf, p)
	}
	return xxh3.Hash(buf)
}
