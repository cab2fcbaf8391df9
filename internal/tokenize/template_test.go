package tokenize

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDetectContentFormat(t *testing.T) {
	tests := []struct {
		name, src string
		want      contentFormat
	}{
		{"plain string", `{% for message in messages %}{{ message['content'] }}{% endfor %}`, contentString},
		{"loop over content", `{% for message in messages %}{% for part in message['content'] %}{{ part.text }}{% endfor %}{% endfor %}`, contentOpenAI},
		{"attribute access", `{%- for m in messages -%}{%- for c in m.content -%}{{ c }}{%- endfor -%}{%- endfor -%}`, contentOpenAI},
		{"via assigned slice", `{% set loop_messages = messages[1:] %}{% for message in loop_messages %}{% for item in message['content'] | reverse %}{% endfor %}{% endfor %}`, contentOpenAI},
		{"chained assignment", `{% set a = messages %}{% set b = a[1:] %}{% for x in b %}{% for y in x.content %}{% endfor %}{% endfor %}`, contentOpenAI},
		{"content of something else", `{% for tool in tools %}{% for p in tool.content %}{% endfor %}{% endfor %}`, contentString},
		{"content loop not on a message", `{% for message in messages %}{% endfor %}{% for p in message.contents %}{% endfor %}`, contentString},
		{"loop with filter clause", `{% for message in messages if message.role != 'system' %}{% for p in message['content'] %}{% endfor %}{% endfor %}`, contentOpenAI},
		{"no messages at all", `hello`, contentString},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := detectContentFormat(tt.src); got != tt.want {
				t.Errorf("detectContentFormat() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDetectContentFormatRealTemplates(t *testing.T) {
	for _, fam := range goldenFamilies {
		m := loadFamily(t, fam, Options{Encoder: simEncoder{}})
		tm, err := m.templates.pick(false)
		if err != nil {
			t.Fatal(err)
		}
		want := contentString
		if fam.name == "gemma3" {
			want = contentOpenAI
		}
		if tm.format != want {
			t.Errorf("%s: format %v, want %v", fam.name, tm.format, want)
		}
	}
}

// writeModelDir writes a minimal model directory: files maps names to
// contents; tokenizer.json defaults to one with no added tokens.
func writeModelDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if _, ok := files["tokenizer.json"]; !ok {
		files["tokenizer.json"] = `{"added_tokens": []}`
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTemplateDiscovery(t *testing.T) {
	cfgNamed := `{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}], "bos_token": "<s>"}`
	tests := []struct {
		name     string
		files    map[string]string
		explicit string
		tools    bool
		want     string
		wantErr  bool
	}{
		{"tokenizer_config string", map[string]string{"tokenizer_config.json": `{"chat_template": "C{{ bos_token }}"}`}, "", false, "C", false},
		{"jinja file wins", map[string]string{"tokenizer_config.json": `{"chat_template": "C"}`, "chat_template.jinja": "J"}, "", false, "J", false},
		{"chat_template.json", map[string]string{"chat_template.json": `{"chat_template": "P"}`}, "", false, "P", false},
		{"named default", map[string]string{"tokenizer_config.json": cfgNamed}, "", false, "D", false},
		{"named tool_use with tools", map[string]string{"tokenizer_config.json": cfgNamed}, "", true, "T", false},
		{"explicit text", map[string]string{"tokenizer_config.json": `{"chat_template": "C"}`}, "{{ 'X' }}", false, "X", false},
		{"no template", map[string]string{"tokenizer_config.json": `{}`}, "", false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Load(writeModelDir(t, tt.files), Options{ChatTemplate: tt.explicit, Encoder: simEncoder{}})
			if err != nil {
				t.Fatal(err)
			}
			body := `{"messages": [{"role": "user", "content": "hi"}]}`
			if tt.tools {
				body = `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}]}`
			}
			got, err := m.RenderChat([]byte(body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("RenderChat() error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("RenderChat() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExplicitTemplateFile(t *testing.T) {
	dir := writeModelDir(t, map[string]string{"tokenizer_config.json": `{"chat_template": "C"}`})
	path := filepath.Join(t.TempDir(), "t.jinja")
	if err := os.WriteFile(path, []byte("F"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir, Options{ChatTemplate: path, Encoder: simEncoder{}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.RenderChat([]byte(`{"messages": []}`))
	if err != nil || got != "F" {
		t.Errorf("RenderChat() = %q, %v; want F", got, err)
	}
	if _, err := Load(dir, Options{ChatTemplate: filepath.Join(t.TempDir(), "missing"), Encoder: simEncoder{}}); err == nil {
		t.Error("Load with a missing template file succeeded")
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope"), Options{}); err == nil {
		t.Error("Load of a missing directory succeeded")
	}
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(f, Options{}); err == nil {
		t.Error("Load of a file succeeded")
	}
	bad := writeModelDir(t, map[string]string{"tokenizer_config.json": `{"chat_template": "{% for %}"}`})
	if _, err := Load(bad, Options{Encoder: simEncoder{}}); err == nil {
		t.Error("Load with a broken template succeeded")
	}
}

func TestSimWithTemplate(t *testing.T) {
	m, err := Load(SimSpec, Options{ChatTemplate: "{% for m in messages %}{{ bos_token }}{{ m.content }}{% endfor %}"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Chat([]byte(`{"messages":[{"role":"user","content":"x"}]}`))
	if err != nil || p.Text != "<|begin_of_text|>x" {
		t.Errorf("Chat() = %q, %v; want the template's rendering", p.Text, err)
	}
	if _, err := Load(SimSpec, Options{ChatTemplate: "{% if %}"}); err == nil {
		t.Error("Load with a broken template succeeded")
	}
}
