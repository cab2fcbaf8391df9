package tokenize

import (
	"errors"
	"testing"
)

// probeTemplate shows what the template sees: each message as JSON, the
// tools, the generation prompt flag and two kwargs.
const probeTemplate = `{% for m in messages %}[{{ m | tojson }}]{% endfor %}` +
	`{% if tools is not none %}T{{ tools | tojson }}{% endif %}` +
	`{% if documents is not none %}D{{ documents | tojson }}{% endif %}` +
	`{% if add_generation_prompt %}<gen>{% endif %}{{ extra_var }}|{{ bos_token }}`

const openaiTemplate = `{% for m in messages %}{% for p in m.content %}({{ p.text }}){% endfor %}{% endfor %}`

func probeModel(t *testing.T, tmpl string, opts Options) *Model {
	t.Helper()
	opts.Encoder = simEncoder{}
	m, err := Load(writeModelDir(t, map[string]string{
		"tokenizer_config.json": `{"bos_token": "<s>", "eos_token": {"content": "</s>"}}`,
		"chat_template.jinja":   tmpl,
	}), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestChatPreparation(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"plain", `{"messages":[{"role":"user","content":"hi"}]}`,
			`[{"role": "user", "content": "hi"}]<gen>|<s>`},
		{"parts joined with newlines", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},"b",{"type":"text","text":null},{"type":"input_text","text":"c"}]}]}`,
			`[{"role": "user", "content": "a\nb\nc"}]<gen>|<s>`},
		{"null content is empty", `{"messages":[{"role":"assistant","content":null}],"add_generation_prompt":false}`,
			`[{"role": "assistant", "content": ""}]|<s>`},
		{"tool call arguments parsed", `{"messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{\"z\": 1, \"a\": 2.0}"}}]}]}`,
			`[{"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": {"z": 1, "a": 2.0}}}]}]<gen>|<s>`},
		{"bad arguments become {}", `{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{oops"}},{"function":{"name":"g","arguments":""}},{"function":{"name":"h"}}]}]}`,
			`[{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {}}}, {"function": {"name": "g", "arguments": {}}}, {"function": {"name": "h", "arguments": {}}}]}]<gen>|<s>`},
		{"empty tool_calls dropped", `{"messages":[{"role":"assistant","content":"x","tool_calls":[]}]}`,
			`[{"role": "assistant", "content": "x"}]<gen>|<s>`},
		{"tool message", `{"messages":[{"role":"tool","tool_call_id":"c1","name":"f","content":[{"type":"text","text":"r1"},{"type":"text","text":"r2"}]}]}`,
			`[{"role": "tool", "content": "r1\nr2", "tool_call_id": "c1", "name": "f"}]<gen>|<s>`},
		{"reasoning copied", `{"messages":[{"role":"assistant","content":"x","reasoning_content":"why"}]}`,
			`[{"role": "assistant", "content": "x", "reasoning": "why", "reasoning_content": "why"}]<gen>|<s>`},
		{"tools dumped like vLLM", `{"messages":[],"tools":[{"function":{"parameters":{"b":1,"a":2},"name":"f","strict":true}}]}`,
			`T[{"type": "function", "function": {"name": "f", "description": null, "parameters": {"b": 1, "a": 2}, "strict": true}}]<gen>|<s>`},
		{"documents passed", `{"messages":[],"documents":[{"title":"t","text":"x"}]}`,
			`D[{"title": "t", "text": "x"}]<gen>|<s>`},
		{"kwargs reach the template", `{"messages":[],"chat_template_kwargs":{"extra_var":"E","bos_token":"<B>","unused":1}}`,
			`<gen>E|<B>`},
		{"kwargs may turn off the generation prompt", `{"messages":[],"chat_template_kwargs":{"add_generation_prompt":false}}`,
			`|<s>`},
		{"developer tools and task", `{"messages":[{"role":"developer","content":"d","task":"t"},{"role":"developer","content":"e","tools":[{"n":1}]}]}`,
			`[{"role": "developer", "content": "d", "task": "t", "tools": null}][{"role": "developer", "content": "e", "tools": [{"n": 1}]}]<gen>|<s>`},
		{"unicode and html kept", `{"messages":[{"role":"user","content":"<b>&'日本🎉"}]}`,
			`[{"role": "user", "content": "<b>&'日本🎉"}]<gen>|<s>`},
	}
	m := probeModel(t, probeTemplate, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.RenderChat([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("RenderChat()\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestChatOpenAIFormat(t *testing.T) {
	m := probeModel(t, openaiTemplate, Options{})
	got, err := m.RenderChat([]byte(`{"messages":[{"role":"user","content":"one"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "(one)(a)(b)"; got != want {
		t.Errorf("RenderChat() = %q, want %q", got, want)
	}
}

func TestContinueFinalMessage(t *testing.T) {
	const tmpl = `{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}`
	tests := []struct {
		name, last, want string
	}{
		{"plain", "The answer is", "<user>q</user><assistant>The answer is"},
		{"trailing space trimmed by the template", "The answer is ", "<user>q</user><assistant>The answer is"},
		{"leading space", "  lead", "<user>q</user><assistant>lead"},
		{"repeated text uses the last occurrence", "q", "<user>q</user><assistant>q"},
	}
	m := probeModel(t, tmpl, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":` + quote(tt.last) + `}],"continue_final_message":true,"add_generation_prompt":false}`
			got, err := m.RenderChat([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("RenderChat() = %q, want %q", got, tt.want)
			}
		})
	}
	keep := probeModel(t, `{% for m in messages %}{{ m.content }}{% endfor %}END`, Options{})
	got, err := keep.RenderChat([]byte(`{"messages":[{"role":"assistant","content":"kept  "}],"continue_final_message":true,"add_generation_prompt":false}`))
	if err != nil || got != "kept  " {
		t.Errorf("template keeping spaces: RenderChat() = %q, %v; want %q", got, err, "kept  ")
	}
}

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		if r == '"' || r == '\\' {
			b = append(b, '\\')
		}
		b = append(b, string(r)...)
	}
	return string(append(b, '"'))
}

func TestChatRequestErrors(t *testing.T) {
	tests := []struct{ name, body string }{
		{"not json", `{`},
		{"not an object", `[1]`},
		{"no messages", `{}`},
		{"messages not a list", `{"messages": "x"}`},
		{"message without role", `{"messages": [{"content": "x"}]}`},
		{"image part", `{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}`},
		{"both generation flags", `{"messages": [{"role": "user", "content": "x"}], "continue_final_message": true}`},
		{"flag not a bool", `{"messages": [], "add_generation_prompt": "yes"}`},
		{"request template not trusted", `{"messages": [], "chat_template": "X"}`},
		{"reserved kwarg", `{"messages": [], "chat_template_kwargs": {"tokenize": true}}`},
		{"tool without name", `{"messages": [], "tools": [{"type": "function", "function": {}}]}`},
		{"template raises", `{"messages": [{"role": "boom", "content": "x"}]}`},
		{"final message missing", `{"messages": [], "continue_final_message": true, "add_generation_prompt": false}`},
		{"trailing data", `{"messages": []} x`},
		{"kwargs set both generation flags", `{"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"continue_final_message": true}}`},
	}
	m := probeModel(t, `{% for m in messages %}{% if m.role == 'boom' %}{{ raise_exception('no') }}{% endif %}{% endfor %}`, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Chat([]byte(tt.body))
			var re *RequestError
			if !errors.As(err, &re) {
				t.Errorf("Chat() error = %v, want a *RequestError", err)
			}
		})
	}
}

func TestRequestChatTemplate(t *testing.T) {
	m := probeModel(t, "model", Options{TrustRequestChatTemplate: true})
	for range 2 { // the second time from the compiled-template cache
		got, err := m.RenderChat([]byte(`{"messages": [], "chat_template": "req{{ bos_token }}"}`))
		if err != nil || got != "req<s>" {
			t.Fatalf("RenderChat() = %q, %v; want req<s>", got, err)
		}
	}
}

func TestSimChat(t *testing.T) {
	m, err := Load(SimSpec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Chat([]byte(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|start|>system\ns<|end|>\n<|start|>user\na\nb<|end|>\n<|start|>assistant\n"; p.Text != want {
		t.Errorf("Text = %q, want %q", p.Text, want)
	}
	back, err := m.Decode(p.TokenIDs, false)
	if err != nil || back != p.Text {
		t.Errorf("Decode(ids) = %q, %v; want the text", back, err)
	}
	p, err = m.Chat([]byte(`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"part"}],"continue_final_message":true,"add_generation_prompt":false}`))
	if err != nil || p.Text != "<|start|>user\nq<|end|>\n<|start|>assistant\npart" {
		t.Errorf("continue_final_message: %q, %v", p.Text, err)
	}
	if _, err := m.Chat([]byte(`{"messages":[{"role":"user","content":"q"}],"continue_final_message":true}`)); err == nil {
		t.Error("both generation flags accepted")
	}
}
