package tokenize

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestPieceCacheEvictsByBytes(t *testing.T) {
	key := func(i int) string { return fmt.Sprintf("%064d", i) }
	ids := []uint32{1, 2, 3, 4}
	one := entryCost(key(0), ids)
	c := newPieceCache(3*one, newCacheMetrics(nil, "t"))
	for i := range 3 {
		c.add(key(i), ids)
	}
	if _, ok := c.get(key(0)); !ok { // 0 is now the most recent
		t.Fatal("entry 0 missing before the cache is full")
	}
	c.add(key(3), ids) // evicts the least recently used: 1
	if _, ok := c.get(key(1)); ok {
		t.Error("entry 1 survived; want it evicted as least recently used")
	}
	for _, i := range []int{0, 2, 3} {
		if _, ok := c.get(key(i)); !ok {
			t.Errorf("entry %d evicted", i)
		}
	}
	if b, n := c.size(); b > 3*one || n != 3 {
		t.Errorf("size = %d bytes, %d entries; want <= %d, 3", b, n, 3*one)
	}
	c.add(strings.Repeat("x", int(4*one)), ids) // larger than the whole cache
	if _, n := c.size(); n != 3 {
		t.Errorf("an entry larger than the cache was stored")
	}
}

func TestPieceCacheCopiesIDs(t *testing.T) {
	c := newPieceCache(1<<20, newCacheMetrics(nil, "t"))
	ids := []uint32{7, 8}
	c.add("k", ids)
	ids[0] = 99
	got, _ := c.get("k")
	if !slices.Equal(got, []uint32{7, 8}) {
		t.Errorf("cached ids changed with the caller's slice: %v", got)
	}
}

func TestCacheMetricsRegisterPerModel(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, spec := range []string{SimSpec, "other"} {
		newCacheMetrics(reg, spec) // must not panic: labelled by model
	}
}

// randomPrompt builds text from words, special tokens and unicode, so that
// pieces repeat across prompts.
func randomPrompt(r *rand.Rand, specials []string) string {
	words := []string{"the", " cache", " router", "\n", "  ", "日本語", " 🎉", "token", " a", "\t", "System prompt: be brief. ", "x"}
	var b strings.Builder
	for range r.IntN(200) {
		switch k := r.IntN(10); {
		case k == 0 && len(specials) > 0:
			b.WriteString(specials[r.IntN(len(specials))])
		case k == 1:
			b.WriteString(strings.Repeat("shared system prompt text ", 8))
		default:
			b.WriteString(words[r.IntN(len(words))])
		}
	}
	return b.String()
}

// TestEncodeDeterministicConcurrent checks, for every golden family, that
// the cached piece encoder gives the same ids as the tokenizer on the whole
// text, from many goroutines at once, warm and cold.
func TestEncodeDeterministicConcurrent(t *testing.T) {
	for _, fam := range goldenFamilies {
		t.Run(fam.name, func(t *testing.T) {
			m := loadFamily(t, fam, Options{CacheBytes: 1 << 16, CacheMinPieceBytes: 8})
			specials := []string{}
			for _, tok := range m.pieces.tokens[:min(len(m.pieces.tokens), 8)] {
				specials = append(specials, tok.Content)
			}
			r := rand.New(rand.NewPCG(1, uint64(len(fam.name))))
			texts := make([]string, 60)
			want := make([][]uint32, len(texts))
			for i := range texts {
				texts[i] = randomPrompt(r, specials)
				ids, err := m.enc.Encode(texts[i], i%2 == 0)
				if err != nil {
					t.Fatal(err)
				}
				want[i] = ids
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range 3 * len(texts) {
						i := (k*7 + g) % len(texts)
						got, err := m.Encode(texts[i], i%2 == 0)
						if err != nil {
							t.Error(err)
							return
						}
						if !slices.Equal(got, want[i]) {
							t.Errorf("text %d: ids differ from the whole-text encoding", i)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// fakeEncoder is an Encoder whose ids depend on more than the piece: the
// split check must reject it and fall back to whole-text encoding.
type contextEncoder struct{}

func (contextEncoder) Encode(text string, add bool) ([]uint32, error) {
	ids := []uint32{uint32(len(text))}
	if add {
		ids = append([]uint32{uint32(len(text) % 7)}, ids...) // prefix depends on the text
	}
	return ids, nil
}
func (contextEncoder) Decode([]uint32, bool) (string, error) { return "", nil }

func TestPieceEncoderFallsBack(t *testing.T) {
	p := newPieceEncoder(contextEncoder{}, []addedToken{{ID: 5, Content: "<|x|>"}}, Options{CacheBytes: 1 << 20, CacheMinPieceBytes: 1}, newCacheMetrics(nil, "t"))
	if p.split || p.wrap {
		t.Fatalf("split %v, wrap %v; want both off for a context-dependent encoder", p.split, p.wrap)
	}
	for _, s := range []string{"ab<|x|>cd", "hello"} {
		for _, add := range []bool{false, true} {
			got, _ := p.encode(s, add)
			want, _ := contextEncoder{}.Encode(s, add)
			if !slices.Equal(got, want) {
				t.Errorf("encode(%q, %v) = %v, want %v", s, add, got, want)
			}
		}
	}
}
