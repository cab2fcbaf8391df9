// Package msgpackfixture builds msgpack byte fixtures for the adapters' tests, in
// the same notation as docs/engines.md#vllm-byte-fixtures: hex bytes with strings spelled out.
package msgpackfixture

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// Hex parses space-separated hex bytes; a token in double quotes is a msgpack
// str (fixstr or str8) of its text.
func Hex(s string) []byte {
	var out []byte
	for _, tok := range strings.Fields(s) {
		if strings.HasPrefix(tok, `"`) && strings.HasSuffix(tok, `"`) && len(tok) >= 2 {
			out = append(out, Str(tok[1:len(tok)-1])...)
			continue
		}
		b, err := hex.DecodeString(tok)
		if err != nil {
			panic(fmt.Sprintf("msgpackfixture: bad hex %q: %v", tok, err))
		}
		out = append(out, b...)
	}
	return out
}

// Str encodes s as a msgpack fixstr or str8.
func Str(s string) []byte {
	if len(s) < 32 {
		return append([]byte{0xa0 | byte(len(s))}, s...)
	}
	return append([]byte{0xd9, byte(len(s))}, s...)
}

// TS is ts = 1767225600.25 as float64, the timestamp of docs/engines.md#vllm-byte-fixtures.
const TS = "cb 41 da 55 6e 40 10 00 00"

// Tokens16 is the array16 of the 16 tokens of docs/engines.md#vllm-byte-fixtures.
const Tokens16 = "dc 00 10 ce 00 02 50 5c cd 03 68 cc c6 cd 23 68 cd 01 76 cd 01 17 cd 1a 42 cd 01 3b " +
	"cd 15 f0 1e ce 00 02 50 5d cc c6 ce 00 02 50 5c ce 00 01 2d 23 cc c6 ce 00 02 50 73"

// TokenIDs are the 16 tokens of Tokens16.
var TokenIDs = []uint32{151644, 872, 198, 9064, 374, 279, 6722, 315, 5616, 30, 151645, 198, 151644, 77091, 198, 151667}

// Hash is the engine hash 0xd20799bf0f09a40d as msgpack uint64.
const Hash = "cf d2 07 99 bf 0f 09 a4 0d"

// HashValue is the value of Hash.
const HashValue uint64 = 0xd20799bf0f09a40d

// HashBin is the same hash as a 32-byte sha256_cbor digest (bin8).
const HashBin = "c4 20 01 d0 5b 6f 65 e0 18 69 49 5b 2f ea 10 fc 39 fa af 80 fd 65 92 bd a9 30 d2 07 99 bf 0f 09 a4 0d"
