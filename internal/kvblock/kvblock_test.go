package kvblock

import (
	"math/rand/v2"
	"testing"
	"testing/quick"
)

func randTokens(r *rand.Rand, n int) []uint32 {
	t := make([]uint32, n)
	for i := range t {
		t[i] = r.Uint32N(200000)
	}
	return t
}

func TestOnlyFullBlocksAreHashed(t *testing.T) {
	seed := NewSeed("m", "", "")
	for _, tc := range []struct {
		name       string
		tokens, bs int
		want       int
	}{
		{"empty", 0, 16, 0},
		{"partial", 15, 16, 0},
		{"one", 16, 16, 1},
		{"one and a bit", 17, 16, 1},
		{"many", 16*7 + 3, 16, 7},
		{"bad block size", 32, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Hashes(nil, seed, make([]uint32, tc.tokens), tc.bs)
			if len(got) != tc.want {
				t.Fatalf("len(Hashes) = %d, want %d", len(got), tc.want)
			}
		})
	}
}

// A changed token changes its block and every later one, never an earlier one.
func TestChangedTokenChangesItsBlockAndLaterOnes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	f := func(n16 uint8, pos uint16) bool {
		n := (int(n16)%20 + 1) * 16
		tokens := randTokens(r, n)
		p := int(pos) % n
		seed := NewSeed("model", "", "")
		a := Hashes(nil, seed, tokens, 16)
		tokens[p]++
		b := Hashes(nil, seed, tokens, 16)
		blk := p / 16
		for i := range a {
			if i < blk && a[i] != b[i] {
				return false
			}
			if i >= blk && a[i] == b[i] {
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 500}); err != nil {
		t.Fatal(err)
	}
}

// A prefix hashes the same alone or inside a longer prompt.
func TestPrefixHashesTheSameAloneOrInsideLongerPrompt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	f := func(a, b uint16) bool {
		long := randTokens(r, int(a)%2000+int(b)%50)
		cut := int(b) % (len(long) + 1)
		seed := NewSeed("m", "lora", "salt")
		full := Hashes(nil, seed, long, 16)
		pre := Hashes(nil, seed, long[:cut], 16)
		for i := range pre {
			if pre[i] != full[i] {
				return false
			}
		}
		// Resuming the chain gives the same hashes as hashing at once.
		if len(pre) > 0 {
			rest := Continue(nil, pre[len(pre)-1], long[len(pre)*16:], 16)
			for i := range rest {
				if rest[i] != full[len(pre)+i] {
					return false
				}
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}

// The seed separates model, LoRA adapter and cache_salt.
func TestSeedSeparatesModelLoraAndSalt(t *testing.T) {
	seeds := map[Hash]string{}
	for _, in := range [][3]string{
		{"m", "", ""}, {"m2", "", ""}, {"m", "l", ""}, {"m", "", "l"}, {"m", "", "s"},
		{"ml", "", ""}, {"", "ml", ""}, {"m", "l", "s"}, {"m", "ls", ""}, {"", "", ""},
	} {
		s := NewSeed(in[0], in[1], in[2])
		if prev, dup := seeds[s]; dup {
			t.Fatalf("NewSeed%q collides with %s", in, prev)
		}
		seeds[s] = in[0] + "|" + in[1] + "|" + in[2]
	}
	tokens := make([]uint32, 32)
	a := Hashes(nil, NewSeed("m", "", ""), tokens, 16)
	b := Hashes(nil, NewSeed("m", "", "salt"), tokens, 16)
	if a[0] == b[0] || a[1] == b[1] {
		t.Fatal("cache_salt did not separate identical tokens")
	}
}

func BenchmarkNext(b *testing.B) {
	tokens := randTokens(rand.New(rand.NewPCG(5, 6)), 16)
	b.ReportAllocs()
	h := NewSeed("m", "", "")
	for b.Loop() {
		h = Next(h, tokens)
	}
	_ = h
}

func BenchmarkHashes8kPrompt(b *testing.B) {
	tokens := randTokens(rand.New(rand.NewPCG(5, 6)), 8192)
	dst := make([]Hash, 0, 512)
	seed := NewSeed("m", "", "")
	b.ReportAllocs()
	for b.Loop() {
		dst = Hashes(dst[:0], seed, tokens, 16)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*512), "ns/block")
}
