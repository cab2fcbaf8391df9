package tokenize

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ardanlabs/jinja"
	"github.com/google/go-cmp/cmp"
)

// fuzzSeeds are request bodies to start from: a few golden requests of each
// family plus hand-written edge cases.
func fuzzSeeds(f *testing.F) {
	for _, b := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":"{\"a\":[1,2.5e3,null]}"}}]}],"tools":[{"function":{"name":"f"}}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"continue_final_message":true,"add_generation_prompt":false}`,
		`{"messages":[],"chat_template_kwargs":{"tools_in_user_message":false,"date_string":1}}`,
		`{"prompt":[[1,2],"x"]}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
		`{"messages":[{"role":"tool","content":{"a":1}}]}`,
	} {
		f.Add([]byte(b))
	}
	for _, fam := range goldenFamilies {
		recs := readGoldens(f, fam.name)
		for _, r := range recs[:min(len(recs), 5)] {
			f.Add([]byte(r.Request))
		}
	}
}

// FuzzChat checks that no request body makes Chat, RenderChat or Completion
// panic, for builtin:sim and for each golden family's real template (with
// the sim encoder, to keep iterations fast).
func FuzzChat(f *testing.F) {
	fuzzSeeds(f)
	models := []*Model{}
	sim, err := Load(SimSpec, Options{})
	if err != nil {
		f.Fatal(err)
	}
	models = append(models, sim)
	for _, fam := range goldenFamilies {
		models = append(models, templateOnlyModel(f, fam))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, m := range models {
			_, _ = m.Chat(body)
			_, _ = m.Completion(body)
		}
	})
}

// FuzzDecodeJSON checks the ordered JSON decoder against encoding/json: it
// never panics, accepts exactly the valid documents (within its depth
// limit) and decodes them to the same values.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1, 2.0, -0, 1e400]`, `{"a":{"b":[true,false,null]},"a":"dup"}`,
		`"\ud800"`, `{`, `1 2`, `"a\u00e9\n\"b"`, "\"\xff\"", `[[[[]]]]`, ` {"x" : [ 1 , "2" ] } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeJSON(data)
		var want any
		stdErr := json.Unmarshal(data, &want)
		var rangeErr *json.UnmarshalTypeError
		if errors.As(stdErr, &rangeErr) {
			return // a number beyond float64: Python (and we) give inf
		}
		switch {
		case err == nil && stdErr != nil:
			t.Fatalf("decodeJSON accepted %q; encoding/json: %v", data, stdErr)
		case err != nil && stdErr == nil && !strings.Contains(err.Error(), "nested deeper"):
			t.Fatalf("decodeJSON rejected valid %q: %v", data, err)
		case err == nil:
			if diff := cmp.Diff(want, toAny(v)); diff != "" {
				t.Fatalf("decodeJSON(%q) mismatch (-encoding/json +ours):\n%s", data, diff)
			}
		}
	})
}

// toAny converts a decoded value to what encoding/json gives for it.
func toAny(v jinja.Value) any {
	switch {
	case v.IsNone():
		return nil
	case v.IsBool():
		return v.AsBool()
	case v.IsInt():
		return float64(v.AsInt())
	case v.IsFloat():
		return v.AsFloat()
	case v.IsString():
		return v.AsString()
	case v.IsList():
		out := []any{}
		for _, it := range v.AsList().Items {
			out = append(out, toAny(it))
		}
		return out
	case v.IsDict():
		out := map[string]any{}
		d := v.AsDict()
		for _, k := range d.Keys {
			out[k] = toAny(d.Data[k])
		}
		return out
	}
	return "undefined"
}

// templateOnlyModel loads a family's chat template and tokenizer_config.json
// with the sim encoder and no tokenizer.json: quick to load in every fuzz
// worker.
func templateOnlyModel(t testing.TB, fam goldenFamily) *Model {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(fixtureDir(t, fam.fixture), "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{"tokenizer_config.json": cfg, "tokenizer.json": []byte(`{"added_tokens": []}`)}
	if fam.template != "" {
		if files["chat_template.jinja"], err = os.ReadFile(fam.template); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Load(dir, Options{Encoder: simEncoder{}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
