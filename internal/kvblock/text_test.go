package kvblock

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"testing/quick"
)

func TestTextHashesOnlyFullChunks(t *testing.T) {
	seed := TextSeed("m", "", "")
	for _, tc := range []struct {
		name         string
		bytes, chunk int
		want         int
	}{
		{"empty", 0, 64, 0},
		{"partial", 63, 64, 0},
		{"one", 64, 64, 1},
		{"many and a bit", 64*9 + 5, 64, 9},
		{"chunk 1", 7, 1, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TextHashes(nil, seed, bytes.Repeat([]byte("a"), tc.bytes), tc.chunk)
			if len(got) != tc.want {
				t.Fatalf("len(TextHashes) = %d, want %d", len(got), tc.want)
			}
		})
	}
}

// TestTextHasherSplitsDoNotMatter: the hashes depend on the bytes, not on how
// they were written.
func TestTextHasherSplitsDoNotMatter(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	f := func(n uint16, chunk8 uint8) bool {
		text := make([]byte, int(n)%3000)
		for i := range text {
			text[i] = byte(r.Uint32())
		}
		chunk := int(chunk8)%100 + 1
		seed := TextSeed("model", "lora", "salt")
		want := TextHashes(nil, seed, text, chunk)
		var h TextHasher
		h.Reset(nil, seed, chunk)
		rest := text
		for len(rest) > 0 {
			k := min(len(rest), r.IntN(2*chunk+2))
			switch r.IntN(3) {
			case 0:
				h.Write(rest[:k])
			case 1:
				h.WriteString(string(rest[:k]))
			default:
				for _, c := range rest[:k] {
					_ = h.WriteByte(c)
				}
			}
			rest = rest[k:]
		}
		got := h.Hashes()
		if h.Len() != len(text) || len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}

func TestTextHashesNameTheirPrefix(t *testing.T) {
	seed := TextSeed("m", "", "")
	shared := bytes.Repeat([]byte("system prompt "), 20) // 280 bytes: 4 chunks of 64
	a := TextHashes(nil, seed, append(bytes.Clone(shared), "question one, a long one at that"...), 64)
	b := TextHashes(nil, seed, append(bytes.Clone(shared), "another question, as long again"...), 64)
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("got %d and %d chunks, want 4 each", len(a), len(b))
	}
	for i := range 4 {
		if a[i] != b[i] {
			t.Fatalf("chunk %d differs inside the shared prefix", i)
		}
	}
	c := TextHashes(nil, seed, append([]byte("X"), shared...), 64)
	if c[0] == a[0] || c[3] == a[3] {
		t.Fatal("a changed first byte kept a chunk hash")
	}
	if o := TextHashes(nil, TextSeed("other", "", ""), shared, 64); o[0] == a[0] {
		t.Fatal("another model's text has the same identity")
	}
	if s := TextHashes(nil, TextSeed("m", "", "salt"), shared, 64); s[0] == a[0] {
		t.Fatal("a cache_salt did not change the identity")
	}
}

func TestTextSeedIsNotTheTokenSeed(t *testing.T) {
	if TextSeed("m", "l", "s") == NewSeed("m", "l", "s") {
		t.Fatal("TextSeed equals NewSeed for the same names")
	}
}

func BenchmarkTextHashes(b *testing.B) {
	text := bytes.Repeat([]byte("lorem ipsum dolor sit amet "), 600) // ~16 KB
	seed := TextSeed("m", "", "")
	dst := make([]Hash, 0, len(text)/64)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		dst = TextHashes(dst[:0], seed, text, 64)
	}
}
