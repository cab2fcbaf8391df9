package hf

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"
)

// tinyJSON is a minimal byte-level BPE tokenizer.json used by unit tests.
const tinyJSON = `{
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [
    {"id": 6, "content": "<|eos|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 7, "content": "hi", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false}
  ],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|eos|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<|eos|>", "type_id": 0}}],
    "pair": [], "special_tokens": {"<|eos|>": {"id": "<|eos|>", "ids": [6], "tokens": ["<|eos|>"]}}},
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
    "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
    "vocab": {"a": 0, "b": 1, "Ġ": 2, "ab": 3, "Ġab": 4, "c": 5},
    "merges": [["a", "b"], ["Ġ", "ab"]]}
}`

func TestTinyTokenizer(t *testing.T) {
	tk, err := New([]byte(tinyJSON), Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		text string
		add  bool
		want []uint32
	}{
		{"merges", "ab ab", false, []uint32{3, 4}},
		{"template", "ab", true, []uint32{6, 3, 6}},
		{"added_raw", "ab<|eos|>c", false, []uint32{3, 6, 5}},
		{"added_normalized", "abhic", false, []uint32{3, 7, 5}},
		{"unknown_dropped", "ax", false, []uint32{0}},
		{"empty", "", false, []uint32{}},
		{"empty_template", "", true, []uint32{6, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tk.Encode(tt.text, tt.add)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Encode(%q, %v) mismatch (-want +got):\n%s", tt.text, tt.add, diff)
			}
		})
	}
	if got, _ := tk.Decode([]uint32{6, 3, 4, 99, 6}, true); got != "ab ab" {
		t.Errorf("Decode(skip) = %q, want %q", got, "ab ab")
	}
	if got, _ := tk.Decode([]uint32{6, 3}, false); got != "<|eos|>ab" {
		t.Errorf("Decode = %q, want %q", got, "<|eos|>ab")
	}
	if id, ok := tk.TokenID("<|eos|>"); !ok || id != 6 {
		t.Errorf("TokenID(<|eos|>) = %d, %v", id, ok)
	}
	if !tk.IsSpecial(6) || tk.IsSpecial(7) || tk.IsSpecial(3) {
		t.Errorf("IsSpecial wrong")
	}
	if tk.VocabSize() != 8 {
		t.Errorf("VocabSize = %d, want 8", tk.VocabSize())
	}
	if _, err := tk.Encode("a\xffb", false); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("Encode(invalid UTF-8) err = %v, want ErrInvalidUTF8", err)
	}
}

// TestRefusesUnsupported checks that components this package does not
// implement are refused at load, naming the component.
func TestRefusesUnsupported(t *testing.T) {
	tests := []struct {
		name, old, new, wantErr string
	}{
		{"model_unigram", `"type": "BPE"`, `"type": "Unigram"`, `model "Unigram" is not supported`},
		{"dropout", `"dropout": null`, `"dropout": 0.1`, `dropout`},
		{"normalizer", `{"type": "NFC"}`, `{"type": "BertNormalizer"}`, `normalizer "BertNormalizer" is not supported`},
		{"pre_tokenizer", `"pre_tokenizer": {"type": "ByteLevel"`, `"pre_tokenizer": {"type": "BertPreTokenizer"`, `pre_tokenizer "BertPreTokenizer" is not supported`},
		{"decoder", `"decoder": {"type": "ByteLevel"`, `"decoder": {"type": "WordPiece"`, `decoder "WordPiece" is not supported`},
		{"post_processor", `"post_processor": {"type": "TemplateProcessing"`, `"post_processor": {"type": "Foo"`, `post_processor "Foo" is not supported`},
		{"unknown_option", "\"use_regex\": true},\n  \"post", "\"use_regex\": true, \"new_knob\": 1},\n  \"post", `unknown`},
		{"merge_oov", `["a", "b"], ["Ġ", "ab"]`, `["a", "b"], ["Ġ", "zz"]`, `not in the vocabulary`},
		{"bad_regex", `{"type": "NFC"}`, `{"type": "Replace", "pattern": {"Regex": "("}, "content": ""}`, `compile regex`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tinyJSON, tt.old) {
				t.Fatalf("test setup: %q not in tinyJSON", tt.old)
			}
			_, err := New([]byte(strings.Replace(tinyJSON, tt.old, tt.new, 1)), Config{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	err := Config{SegmentCacheBytes: 1 << 50, WordCacheBytes: 1 << 50}.Validate()
	if err == nil || !strings.Contains(err.Error(), "segment_cache_bytes") || !strings.Contains(err.Error(), "word_cache_bytes") {
		t.Errorf("Validate() = %v, want both fields reported", err)
	}
}

// randomText returns a seeded mix of ASCII, unicode, whitespace and the
// special-token strings of the fixtures.
func randomText(rnd *rand.Rand) string {
	parts := []string{"the", " cat", "'s", "'LL", " ", "  ", "\n", "\r\n", "\t", "1234567", "é", "e\u0301",
		"日本語", "😀", "👨‍👩‍👧", "<|im_start|>", "<|begin_of_text|>", "<s>", "</s>", "<bos>", "<start_of_turn>",
		"<｜User｜>", "<|start|>", "▁", "Ġ", "{\"a\": [1, 2]}", "func main() {}", "\u00a0", "\u200b", "ſ"}
	var b strings.Builder
	n := rnd.IntN(40)
	for range n {
		if rnd.IntN(5) == 0 {
			b.WriteRune(rune(rnd.IntN(0x30000)))
			continue
		}
		b.WriteString(parts[rnd.IntN(len(parts))])
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// TestCacheTransparent checks, per family, that the caches never change ids:
// a tokenizer without caches and ones with small, constantly evicting caches
// agree on seeded random texts, each encoded twice. One of the cached
// tokenizers has no segment cache, so that every word goes through the word
// cache; the other has both, as deployed. Which shard an entry lands in
// depends on a random seed per cache, so the hits asserted are the ones no
// seed can take away: the first text is a single short word, which each
// cache holds when that text comes again.
func TestCacheTransparent(t *testing.T) {
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			dir := fixtureDir(t, fam)
			plain, err := LoadWithConfig(dir, Config{DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			both, err := LoadWithConfig(dir, Config{SegmentCacheBytes: 8 << 10, WordCacheBytes: 4 << 10})
			if err != nil {
				t.Fatal(err)
			}
			words, err := LoadWithConfig(dir, Config{SegmentCacheBytes: -1, WordCacheBytes: 4 << 10})
			if err != nil {
				t.Fatal(err)
			}
			rnd := rand.New(rand.NewPCG(7, uint64(len(fam))))
			for i := range 301 {
				text := "the"
				if i > 0 {
					text = randomText(rnd)
				}
				want, err := plain.Encode(text, i%2 == 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, tk := range []*Tokenizer{both, words} {
					for range 2 {
						got, err := tk.Encode(text, i%2 == 0)
						if err != nil {
							t.Fatal(err)
						}
						if diff := cmp.Diff(want, got); diff != "" {
							t.Fatalf("Encode(%q) with cache differs (-nocache +cache):\n%s", text, diff)
						}
					}
				}
			}
			st := both.CacheStats()
			if st.SegmentHits == 0 || st.SegmentBytes > 8<<10 || st.WordBytes > 4<<10 {
				t.Errorf("both caches: stats %+v: want segment hits and bytes within bounds", st)
			}
			st = words.CacheStats()
			if st.WordHits == 0 || st.SegmentHits+st.SegmentMisses != 0 || st.WordBytes > 4<<10 {
				t.Errorf("word cache only: stats %+v: want word hits, no segment cache and bytes within bounds", st)
			}
		})
	}
}

// TestConcurrentEncode has 16 goroutines share one tokenizer and its caches;
// every result must equal the sequential one.
func TestConcurrentEncode(t *testing.T) {
	// "tiny" runs a split regex on regexp2; the others use scanners or no
	// regex at all.
	tinyRegex := strings.Replace(tinyJSON,
		`"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}`,
		`"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
			{"type": "Split", "pattern": {"Regex": "\\s+(?!\\S)|\\s+|\\p{L}+|[^\\s\\p{L}]+"}, "behavior": "Isolated", "invert": false},
			{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]}`, 1)
	for _, fam := range []string{"llama3_1", "llama2", "tiny"} {
		t.Run(fam, func(t *testing.T) {
			load := func(cfg Config) (*Tokenizer, error) {
				if fam == "tiny" {
					tk, err := New([]byte(tinyRegex), cfg)
					if err == nil {
						if _, ok := tk.pre.(preSequence)[0].(*splitPre).pat.(*regex); !ok {
							t.Fatal("tiny tokenizer does not use regexp2")
						}
					}
					return tk, err
				}
				return LoadWithConfig(fixtureDir(t, fam), cfg)
			}
			ref, err := load(Config{DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			shared, err := load(Config{SegmentCacheBytes: 64 << 10, WordCacheBytes: 16 << 10})
			if err != nil {
				t.Fatal(err)
			}
			rnd := rand.New(rand.NewPCG(11, 13))
			texts := make([]string, 64)
			want := make([][]uint32, len(texts))
			for i := range texts {
				texts[i] = randomText(rnd) + benchText(200+rnd.IntN(2000))
				if want[i], err = ref.Encode(texts[i], true); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			errs := make(chan string, 16)
			for g := range 16 {
				wg.Go(func() {
					for k := range 3 * len(texts) {
						i := (k*7 + g) % len(texts)
						got, err := shared.Encode(texts[i], true)
						if err != nil || !slicesEqual(got, want[i]) {
							errs <- texts[i]
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for text := range errs {
				t.Errorf("concurrent Encode(%.60q...) differs from sequential", text)
			}
		})
	}
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDecodeRoundTrip: for byte-level families without special strings in
// the text, decoding the ids gives the (normalized) text back.
func TestDecodeRoundTrip(t *testing.T) {
	for _, fam := range []string{"llama3_1", "qwen3", "gptoss"} {
		t.Run(fam, func(t *testing.T) {
			tk := loadFamily(t, fam)
			rnd := rand.New(rand.NewPCG(3, 5))
			for range 300 {
				text := randomText(rnd)
				ids, err := tk.Encode(text, false)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tk.Decode(ids, false)
				if err != nil {
					t.Fatal(err)
				}
				want := text
				if fam == "qwen3" {
					want = norm.NFC.String(text)
				}
				if got != want {
					t.Fatalf("Decode(Encode(%q)) = %q", text, got)
				}
			}
		})
	}
}

// TestSpecialTokens checks the BOS/EOS information read from the fixture
// configs.
func TestSpecialTokens(t *testing.T) {
	tests := []struct {
		fam     string
		bos     string
		bosID   uint32
		hasBOS  bool
		eosIDs  []uint32
		addBOS  bool
		prepend []uint32 // Encode("", true)
	}{
		{"llama3_1", "<|begin_of_text|>", 128000, true, []uint32{128009}, false, []uint32{128000}},
		{"qwen3", "", 0, false, []uint32{151645}, false, []uint32{}},
		{"llama2", "<s>", 1, true, []uint32{2}, true, []uint32{1}},
		{"gemma3", "<bos>", 2, true, []uint32{106}, true, []uint32{2}},
	}
	for _, tt := range tests {
		t.Run(tt.fam, func(t *testing.T) {
			tk := loadFamily(t, tt.fam)
			id, ok := tk.BOSTokenID()
			if ok != tt.hasBOS || id != tt.bosID {
				t.Errorf("BOSTokenID() = %d, %v; want %d, %v", id, ok, tt.bosID, tt.hasBOS)
			}
			if diff := cmp.Diff(tt.eosIDs, tk.EOSTokenIDs()); diff != "" {
				t.Errorf("EOSTokenIDs mismatch (-want +got):\n%s", diff)
			}
			st := tk.SpecialTokens()
			if st.BOS != tt.bos || st.AddBOS != tt.addBOS {
				t.Errorf("SpecialTokens() = %+v", st)
			}
			got, _ := tk.Encode("", true)
			if diff := cmp.Diff(tt.prepend, got); diff != "" {
				t.Errorf("Encode(\"\", true) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzEncode: arbitrary input never panics, invalid UTF-8 is an error, ids
// are in range, and the cached path equals the uncached one.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "hello world", "<|im_start|>user\nhi<|im_end|>", "  \n\n\t", "日本語😀", "'S 'll", "\xff\xfe", "a\u0301"} {
		f.Add(s, true)
	}
	cached := loadFamily(f, "qwen3")
	plain, err := LoadWithConfig(fixtureDir(f, "qwen3"), Config{DisableCache: true})
	if err != nil {
		f.Fatal(err)
	}
	spm := loadFamily(f, "llama2")
	f.Fuzz(func(t *testing.T, s string, add bool) {
		got, err := cached.Encode(s, add)
		if !utf8.ValidString(s) {
			if !errors.Is(err, ErrInvalidUTF8) {
				t.Fatalf("Encode(invalid) err = %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		want, _ := plain.Encode(s, add)
		if !slicesEqual(got, want) {
			t.Fatalf("cached %v != uncached %v", got, want)
		}
		for _, id := range got {
			if int(id) >= cached.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		if _, err := spm.Encode(s, add); err != nil {
			t.Fatal(err)
		}
		if _, err := cached.Decode(got, false); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzNew: arbitrary tokenizer.json content never panics the loader, and a
// tokenizer that loads can encode.
func FuzzNew(f *testing.F) {
	f.Add([]byte(tinyJSON), "ab ab")
	f.Add([]byte(strings.Replace(tinyJSON, `"ByteLevel", "add_prefix_space": false`, `"Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true, "x": false`, 1)), "a b")
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {}, "merges": []}}`), "x")
	f.Add([]byte(`{}`), "")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tk, err := New(data, Config{SegmentCacheBytes: 4 << 10, WordCacheBytes: 4 << 10})
		if err != nil {
			return
		}
		ids, _ := tk.Encode(text, true)
		_, _ = tk.Decode(ids, true)
	})
}

// TestTransformersPostProcessor checks Config.Transformers: the Llama and
// Gemma tokenizer classes get BOS from add_bos_token whatever tokenizer.json
// says (DeepSeek V3's post-processor adds none); other classes keep
// tokenizer.json's post-processor.
func TestTransformersPostProcessor(t *testing.T) {
	tests := []struct {
		fam        string
		rust, tfms []uint32 // first ids of Encode("hi", true)
	}{
		{"deepseek_v3", nil, []uint32{0}},    // LlamaTokenizerFast, add_bos_token true
		{"llama2", []uint32{1}, []uint32{1}}, // LlamaTokenizer, add_bos_token true
		{"gemma3", []uint32{2}, []uint32{2}}, // GemmaTokenizer
		{"llama3_1", []uint32{128000}, []uint32{128000}},
		{"qwen3", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.fam, func(t *testing.T) {
			plain := loadFamily(t, tt.fam)
			tf, err := LoadWithConfig(fixtureDir(t, tt.fam), Config{Transformers: true, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := plain.Encode("hi", false)
			for _, c := range []struct {
				tk   *Tokenizer
				want []uint32
			}{{plain, tt.rust}, {tf, tt.tfms}} {
				got, err := c.tk.Encode("hi", true)
				if err != nil {
					t.Fatal(err)
				}
				want := append(append([]uint32{}, c.want...), body...)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Encode(hi, true) mismatch (-want +got):\n%s", diff)
				}
			}
			if got, _ := tf.Encode("hi", false); !slicesEqual(got, body) {
				t.Errorf("Encode(hi, false) = %v, want %v", got, body)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(empty dir) err = %v, want fs.ErrNotExist", err)
	}
	tests := []struct {
		name, file, content, wantErr string
	}{
		{"bad_config_json", "tokenizer_config.json", `{`, "parse"},
		{"eos_not_a_token", "tokenizer_config.json", `{"eos_token": "<nope>"}`, `eos_token "<nope>"`},
		{"bad_generation_config", "generation_config.json", `{"eos_token_id": "x"}`, "eos_token_id"},
		{"bad_tokenizer_json", "tokenizer.json", `{"model": 3}`, "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tinyJSON), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Load() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tinyJSON), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"eos_token": {"content": "<|eos|>"}, "bos_token": "<|eos|>"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id": [6, 5]}`), 0o644)
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint32{6, 5}, tk.EOSTokenIDs()); diff != "" {
		t.Errorf("EOSTokenIDs mismatch (-want +got):\n%s", diff)
	}
	if id, ok := tk.BOSTokenID(); !ok || id != 6 {
		t.Errorf("BOSTokenID() = %d, %v", id, ok)
	}
}
