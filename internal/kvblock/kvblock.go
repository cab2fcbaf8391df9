package kvblock

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// DefaultBlockSize is vLLM's default KV block size in tokens.
const DefaultBlockSize = 16

// Hash is a router block hash. It names a block and, through the chain, every
// block before it.
type Hash uint64

// NewSeed returns the chain seed for a model, a LoRA adapter (empty for the base
// model) and a cache salt (empty when the request has none). Different inputs
// give different seeds, so identical tokens under another model, adapter or
// salt never share a block.
func NewSeed(model, lora, cacheSalt string) Hash {
	// Length-prefix every field so ("ab","c") and ("a","bc") differ.
	buf := make([]byte, 0, 3*4+len(model)+len(lora)+len(cacheSalt)+len("inferrail/kvblock/v1"))
	buf = append(buf, "inferrail/kvblock/v1"...)
	for _, s := range [...]string{model, lora, cacheSalt} {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	return Hash(xxh3.Hash(buf))
}

// Next returns the hash of block given the hash of its parent (or the seed for
// the first block).
func Next(parent Hash, block []uint32) Hash {
	var stack [64 * 4]byte
	var buf []byte
	if n := len(block) * 4; n <= len(stack) {
		buf = stack[:0]
	} else {
		buf = make([]byte, 0, n)
	}
	for _, t := range block {
		buf = binary.LittleEndian.AppendUint32(buf, t)
	}
	return Hash(xxh3.HashSeed(buf, uint64(parent)))
}

// Hashes appends to dst the chained hashes of every full block of tokens and
// returns the extended slice. A trailing partial block is not hashed.
func Hashes(dst []Hash, seed Hash, tokens []uint32, blockSize int) []Hash {
	if blockSize <= 0 {
		return dst
	}
	h := seed
	for i := 0; i+blockSize <= len(tokens); i += blockSize {
		h = Next(h, tokens[i:i+blockSize])
		dst = append(dst, h)
	}
	return dst
}

// Continue appends the hashes of the full blocks of tokens that follow a prefix
// whose last full block hashed to parent. It is Hashes with the chain resumed,
// used where blocks arrive a few at a time (generated tokens, KV events).
func Continue(dst []Hash, parent Hash, tokens []uint32, blockSize int) []Hash {
	return Hashes(dst, parent, tokens, blockSize)
}
