package tokenize

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// result is a tokenization outcome, errors compared by text.
type result struct {
	Prompts []Prompt
	Err     string
}

func outcome(ps []Prompt, err error) result {
	if err != nil {
		return result{Err: err.Error()}
	}
	return result{Prompts: ps}
}

var bodyCases = []string{
	`{"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},"b"]}],"add_generation_prompt":false}`,
	`{"messages":[{"role":"assistant","tool_calls":[]},{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{\"z\": 1}"}}]}]}`,
	`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"chat_template_kwargs":{"extra_var":"E"}}`,
	`{"messages":[{"role":"user","content":"x"}],"continue_final_message":true,"add_generation_prompt":true}`,
	`{"messages":"no"}`,
	`{"prompt":"hello there"}`,
	`{"prompt":["a","b"],"add_special_tokens":false}`,
	`{"prompt":[1,2,3]}`,
	`{"prompt":[[1,2],"c"]}`,
	`{"prompt":[]}`,
	`{"prompt":null}`,
	`{"prompt":"dup","prompt":"last wins"}`,
	`[1,2]`,
	`{"messages":[]} x`,
	``,
}

// ChatBody and CompletionBody give exactly what Chat and Completion give,
// results and errors, for builtin:sim and a Jinja template; and a Body
// tokenized twice gives the same both times (tokenizing does not change it).
func TestBodyPathsMatchBytePaths(t *testing.T) {
	sim, err := Load(SimSpec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]*Model{"sim": sim, "jinja": probeModel(t, probeTemplate, Options{})}
	for mname, m := range models {
		for i, body := range bodyCases {
			t.Run(fmt.Sprintf("%s/%d", mname, i), func(t *testing.T) {
				p, err := m.Chat([]byte(body))
				wantChat := outcome([]Prompt{p}, err)
				wantComp := outcome(m.Completion([]byte(body)))
				b, err := DecodeBody([]byte(body))
				if err != nil {
					// Then the byte paths fail with the same error.
					got := result{Err: err.Error()}
					if diff := cmp.Diff(wantChat, got); diff != "" {
						t.Errorf("chat: DecodeBody error differs (-Chat +DecodeBody):\n%s", diff)
					}
					if diff := cmp.Diff(wantComp, got); diff != "" {
						t.Errorf("completion: DecodeBody error differs (-Completion +DecodeBody):\n%s", diff)
					}
					return
				}
				for range 2 {
					p, err := m.ChatBody(b)
					if diff := cmp.Diff(wantChat, outcome([]Prompt{p}, err)); diff != "" {
						t.Errorf("ChatBody mismatch (-Chat +ChatBody):\n%s", diff)
					}
					if diff := cmp.Diff(wantComp, outcome(m.CompletionBody(b))); diff != "" {
						t.Errorf("CompletionBody mismatch (-Completion +CompletionBody):\n%s", diff)
					}
				}
			})
		}
	}
}

func TestBodyString(t *testing.T) {
	tests := []struct {
		name, body, field string
		want              string
		wantOK            bool
		wantErr           string
	}{
		{name: "string", body: `{"model":"m1"}`, field: "model", want: "m1", wantOK: true},
		{name: "escaped", body: `{"model":"a\u00e9\n"}`, field: "model", want: "a\u00e9\n", wantOK: true},
		{name: "repeated: last wins", body: `{"model":"a","model":"b"}`, field: "model", want: "b", wantOK: true},
		{name: "invalid utf-8 replaced", body: "{\"model\":\"a\xffb\"}", field: "model", want: "a\ufffdb", wantOK: true},
		{name: "absent", body: `{"x":1}`, field: "model"},
		{name: "null", body: `{"model":null}`, field: "model"},
		{name: "number", body: `{"cache_salt":1}`, field: "cache_salt", wantErr: "cache_salt must be a string"},
		{name: "nested is not top level", body: `{"a":{"model":"m"}}`, field: "model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := DecodeBody([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			s, ok, err := b.String(tc.field)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if s != tc.want || ok != tc.wantOK || gotErr != tc.wantErr {
				t.Errorf("String(%q) = %q, %v, %q; want %q, %v, %q", tc.field, s, ok, gotErr, tc.want, tc.wantOK, tc.wantErr)
			}
		})
	}
}

// FuzzBodyPaths: for any body, the decoded path agrees with the byte path
// of builtin:sim, and nothing panics.
func FuzzBodyPaths(f *testing.F) {
	for _, b := range bodyCases {
		f.Add([]byte(b))
	}
	m, err := Load(SimSpec, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := DecodeBody(body)
		if err != nil {
			if _, cerr := m.Chat(body); cerr == nil || cerr.Error() != err.Error() {
				t.Fatalf("DecodeBody error %q, Chat error %v", err, cerr)
			}
			return
		}
		p1, e1 := m.Chat(body)
		p2, e2 := m.ChatBody(b)
		if diff := cmp.Diff(outcome([]Prompt{p1}, e1), outcome([]Prompt{p2}, e2)); diff != "" {
			t.Fatalf("chat mismatch (-Chat +ChatBody):\n%s", diff)
		}
		c1, e1 := m.Completion(body)
		c2, e2 := m.CompletionBody(b)
		if diff := cmp.Diff(outcome(c1, e1), outcome(c2, e2)); diff != "" {
			t.Fatalf("completion mismatch (-Completion +CompletionBody):\n%s", diff)
		}
		_, _, _ = b.String("model")
	})
}

// A chat request opens a conversation when none of its messages is an
// assistant's; a completion, an empty or malformed message list does not.
func TestOpensConversation(t *testing.T) {
	// Each body: does it open a conversation, does it continue one.
	for body, want := range map[string][2]bool{
		`{"messages":[{"role":"user","content":"hi"}]}`:                                                                 {true, false},
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`:                                 {true, false},
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"a"},{"role":"tool","content":"r"}]}`:    {true, false},
		`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`: {false, true},
		`{"messages":[{"role":"assistant","content":"b"},{"content":"no role"}]}`:                                       {false, false},
		`{"messages":[{"role":"user","content":"a"},{"content":"no role"}]}`:                                            {false, false},
		`{"messages":[]}`:          {false, false},
		`{"messages":"no"}`:        {false, false},
		`{"prompt":"hello there"}`: {false, false},
	} {
		b, err := DecodeBody([]byte(body))
		if err != nil {
			t.Fatalf("DecodeBody(%s): %v", body, err)
		}
		if opens, continues := b.OpensConversation(), b.ContinuesConversation(); opens != want[0] || continues != want[1] {
			t.Errorf("%s: OpensConversation %v, ContinuesConversation %v; want %v, %v", body, opens, continues, want[0], want[1])
		}
	}
}
