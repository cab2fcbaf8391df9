package tokenize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

func TestCompletion(t *testing.T) {
	m, err := Load(SimSpec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body string
		want []Prompt
	}{
		{"string with BOS", `{"prompt": "hi "}`, []Prompt{{Text: "hi ", TokenIDs: simtok.Encode("hi ", true)}}},
		{"without special tokens", `{"prompt": "hi ", "add_special_tokens": false}`, []Prompt{{Text: "hi ", TokenIDs: simtok.Encode("hi ", false)}}},
		{"list of strings", `{"prompt": ["a", "b"]}`, []Prompt{{Text: "a", TokenIDs: simtok.Encode("a", true)}, {Text: "b", TokenIDs: simtok.Encode("b", true)}}},
		{"token ids", `{"prompt": [5, 6, 7]}`, []Prompt{{TokenIDs: []uint32{5, 6, 7}}}},
		{"lists of token ids", `{"prompt": [[1], [2, 3]]}`, []Prompt{{TokenIDs: []uint32{1}}, {TokenIDs: []uint32{2, 3}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Completion([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Completion() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`{}`, `{"prompt": null}`, `{"prompt": []}`, `{"prompt": [-1]}`, `{"prompt": [1.5]}`,
		`{"prompt": [[]]}`, `{"prompt": 3}`, `{"prompt": [{}]}`, `{"prompt": [4294967296]}`, `nope`} {
		if _, err := m.Completion([]byte(bad)); err == nil {
			t.Errorf("Completion(%s) succeeded", bad)
		}
	}
}

func TestCompletionGoldenModel(t *testing.T) {
	m := loadFamily(t, goldenFamilies[0], Options{})
	got, err := m.Completion([]byte(`{"prompt": "hello world"}`))
	if err != nil {
		t.Fatal(err)
	}
	// Llama 3.1: <|begin_of_text|> hello world, as the Rust tokenizers give.
	if diff := cmp.Diff([]uint32{128000, 15339, 1917}, got[0].TokenIDs); diff != "" {
		t.Errorf("ids mismatch (-want +got):\n%s", diff)
	}
	raw, err := m.Raw("hello <|eot_id|> x")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint32{15339, 220, 128009, 865}, raw); diff != "" {
		t.Errorf("Raw ids mismatch (-want +got):\n%s", diff)
	}
}

func TestRunTool(t *testing.T) {
	tests := []struct {
		name, mode, in, want string
	}{
		{"chat", ModeChat, `{"messages":[{"role":"user","content":"hi"}]}`,
			`{"prompt":"<|start|>user\nhi<|end|>\n<|start|>assistant\n","token_ids":` + idsJSON(simtok.Encode("<|start|>user\nhi<|end|>\n<|start|>assistant\n", false)) + "}\n"},
		{"completion", ModeCompletion, `{"prompt":["a",[9]]}`, `{"prompt":"a","token_ids":[1,113]}` + "\n" + `{"prompt":"","token_ids":[9]}` + "\n"},
		{"raw", ModeRaw, `a<b>`, `{"prompt":"a<b>","token_ids":` + idsJSON(simtok.Encode("a<b>", false)) + "}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := RunTool(context.Background(), ToolConfig{Model: SimSpec, Mode: tt.mode, In: strings.NewReader(tt.in), Out: &out})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
	err := RunTool(context.Background(), ToolConfig{Mode: "x"})
	if err == nil || !strings.Contains(err.Error(), "model is required") || !strings.Contains(err.Error(), "mode must be") {
		t.Errorf("Validate() = %v, want every problem reported", err)
	}
	err = RunTool(context.Background(), ToolConfig{Model: SimSpec, Mode: ModeRaw, MaxInput: 2, In: strings.NewReader("abc"), Out: &bytes.Buffer{}})
	if err == nil {
		t.Error("input over MaxInput accepted")
	}
	var re *RequestError
	err = RunTool(context.Background(), ToolConfig{Model: SimSpec, Mode: ModeChat, In: strings.NewReader("{"), Out: &bytes.Buffer{}})
	if !errors.As(err, &re) {
		t.Errorf("bad chat input: err = %v, want *RequestError", err)
	}
}

func idsJSON(ids []uint32) string {
	b, _ := json.Marshal(ids)
	return string(b)
}
