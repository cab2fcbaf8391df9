package tokenize

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// randomPrompt builds text from words, special tokens and unicode, so that
// pieces repeat across prompts.
func randomPrompt(r *rand.Rand, specials []string) string {
	words := []string{"the", " cache", " router", "\n", "  ", "日本語", " 🎉", "token", " a", "\t", "System prompt: be brief. ", "x"}
	var b strings.Builder
	for range r.IntN(200) {
		switch k := r.IntN(10); {
		case k == 0:
			b.WriteString(specials[r.IntN(len(specials))])
		case k == 1:
			b.WriteString(strings.Repeat("shared system prompt text ", 8))
		default:
			b.WriteString(words[r.IntN(len(words))])
		}
	}
	return b.String()
}

var familySpecials = map[string][]string{
	"llama3":       {"<|eot_id|>", "<|start_header_id|>", "<|begin_of_text|>"},
	"qwen3":        {"<|im_start|>", "<|im_end|>", "<think>"},
	"mistral":      {"<s>", "</s>", "[INST]"},
	"gemma3":       {"<start_of_turn>", "<end_of_turn>", "<bos>"},
	"llama3-short": {"<|eot_id|>", "<|end_header_id|>"},
	"deepseek3":    {"<｜User｜>", "<｜Assistant｜>", "<｜end▁of▁sentence｜>"},
}

// TestEncodeDeterministicConcurrent is a property test for every golden
// family: from many goroutines at once, encoding through a cached model
// gives the same ids as an uncached one, each time.
func TestEncodeDeterministicConcurrent(t *testing.T) {
	for _, fam := range goldenFamilies {
		t.Run(fam.name, func(t *testing.T) {
			cached := loadFamily(t, fam, Options{CacheBytes: 1 << 16}) // small: evictions happen
			plain := loadFamily(t, fam, Options{CacheBytes: -1})
			r := rand.New(rand.NewPCG(1, uint64(len(fam.name))))
			texts := make([]string, 60)
			want := make([][]uint32, len(texts))
			for i := range texts {
				texts[i] = randomPrompt(r, familySpecials[fam.name])
				ids, err := plain.Encode(texts[i], i%2 == 0)
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
						got, err := cached.Encode(texts[i], i%2 == 0)
						if err != nil {
							t.Error(err)
							return
						}
						if !slices.Equal(got, want[i]) {
							t.Errorf("text %d: cached ids differ from uncached", i)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

func TestCacheMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := loadFamily(t, goldenFamilies[0], Options{Registerer: reg})
	body := []byte(`{"messages":[{"role":"system","content":"` + strings.Repeat("shared system prompt ", 50) + `"},{"role":"user","content":"hi"}]}`)
	for range 2 {
		if _, err := m.Chat(body); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	hits := -1.0
	for _, mf := range mfs {
		if mf.GetName() != "inferrail_tokenize_cache_hits_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "cache" && l.GetValue() == "segment" {
					hits = mt.GetCounter().GetValue()
				}
			}
		}
	}
	if hits < 1 {
		t.Errorf("segment cache hits = %v after a repeated system prompt, want >= 1", hits)
	}
	// A second model on the same registry is told apart by its label.
	if _, err := Load(fixtureDir(t, "tokenizer-qwen3"), Options{Registerer: reg}); err != nil {
		t.Errorf("second model on one registry: %v", err)
	}
}
