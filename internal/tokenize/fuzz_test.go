package tokenize

import (
	"os"
	"path/filepath"
	"testing"
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

// FuzzDecodeJSON checks that the ordered JSON decoder never panics and
// accepts exactly what encoding/json's Valid accepts (bounded depth aside).
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1, 2.0, -0, 1e400]`, `{"a":{"b":[true,false,null]},"a":"dup"}`, `"\ud800"`, `{`, `1 2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := decodeJSON(data)
		if err == nil && !jsonValid(data) {
			t.Errorf("decodeJSON accepted invalid JSON %q", data)
		}
	})
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
