package tokenize

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ardanlabs/jinja"
)

// contentFormat is how message content reaches the template: vLLM's
// "string" (text parts joined with newlines) or "openai" (a list of
// {"type": "text", "text": ...} parts), detected from the template.
type contentFormat int

const (
	contentString contentFormat = iota
	contentOpenAI
)

// String returns the vLLM name of the format.
func (f contentFormat) String() string {
	if f == contentOpenAI {
		return "openai"
	}
	return "string"
}

// chatTemplate is a compiled chat template and what vLLM derives from its
// source.
type chatTemplate struct {
	source string
	tmpl   *jinja.Template
	format contentFormat
	// words holds every identifier in the source; a chat_template_kwargs key
	// reaches the template only if the template can name it (vLLM keeps the
	// keys among the template's undeclared variables; a key the template
	// never names cannot change the output, so the two rules agree).
	words map[string]bool
}

func compileTemplate(source string) (*chatTemplate, error) {
	t, err := jinja.Compile(source)
	if err != nil {
		return nil, fmt.Errorf("compile chat template: %w", err)
	}
	ct := &chatTemplate{source: source, tmpl: t, format: detectContentFormat(source), words: map[string]bool{}}
	for _, w := range identRE.FindAllString(source, -1) {
		ct.words[w] = true
	}
	return ct, nil
}

var identRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// Content-format detection, after vLLM: the format is "openai" when the
// template loops over the content of a message, where a message is the
// target of a loop over `messages` or over a variable assigned from it
// (`set loop_messages = messages[1:]`).
var (
	stmtRE   = regexp.MustCompile(`(?s)\{%[-+]?\s*(.*?)\s*[-+]?%\}`)
	setRE    = regexp.MustCompile(`^set\s+([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+)$`)
	forRE    = regexp.MustCompile(`^for\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\s+(.+)$`)
	sliceRE  = regexp.MustCompile(`^\[[^\]]*:[^\]]*\]`)
	filterRE = regexp.MustCompile(`^\s*(\||is\s)`)
)

func detectContentFormat(source string) contentFormat {
	var sets, fors [][2]string
	for _, m := range stmtRE.FindAllStringSubmatch(source, -1) {
		stmt := m[1]
		if s := setRE.FindStringSubmatch(stmt); s != nil {
			sets = append(sets, [2]string{s[1], s[2]})
		} else if f := forRE.FindStringSubmatch(stmt); f != nil {
			iter := f[2]
			// Drop a loop filter or the recursive modifier.
			if i := strings.Index(iter, " if "); i >= 0 {
				iter = iter[:i]
			}
			iter = strings.TrimSuffix(strings.TrimSpace(iter), " recursive")
			fors = append(fors, [2]string{f[1], strings.TrimSpace(iter)})
		}
	}
	names := []string{"messages"}
	for i := 0; i < len(names); i++ {
		for _, s := range sets {
			if isVarOrElems(s[1], names[i], "") && !contains(names, s[0]) {
				names = append(names, s[0])
			}
		}
	}
	var msgVars []string
	for _, f := range fors {
		for _, n := range names {
			if isVarOrElems(f[1], n, "") {
				msgVars = append(msgVars, f[0])
				break
			}
		}
	}
	for _, f := range fors {
		for _, n := range msgVars {
			if isVarOrElems(f[1], n, "content") {
				return contentOpenAI
			}
		}
	}
	return contentString
}

// isVarOrElems reports whether expr is `name` (or `name.key` /
// `name['key']` when key is set), optionally sliced, filtered or tested.
func isVarOrElems(expr, name, key string) bool {
	expr = strings.TrimSpace(expr)
	if !strings.HasPrefix(expr, name) {
		return false
	}
	rest := expr[len(name):]
	if rest != "" && isIdentByte(rest[0]) {
		return false
	}
	if key != "" {
		switch {
		case strings.HasPrefix(rest, "."+key):
			rest = rest[len(key)+1:]
			if rest != "" && isIdentByte(rest[0]) {
				return false
			}
		case strings.HasPrefix(rest, "['"+key+"']"), strings.HasPrefix(rest, `["`+key+`"]`):
			rest = rest[len(key)+4:]
		default:
			return false
		}
	}
	if s := sliceRE.FindString(rest); s != "" {
		rest = rest[len(s):]
	}
	return strings.TrimSpace(rest) == "" || filterRE.MatchString(rest)
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// tokenizerConfig is the part of tokenizer_config.json that chat rendering
// uses.
type tokenizerConfig struct {
	ChatTemplate     json.RawMessage `json:"chat_template"`
	AddBOSToken      *bool           `json:"add_bos_token"`
	AddEOSToken      *bool           `json:"add_eos_token"`
	Specials         map[string]string
	AdditionalTokens []string
}

var specialTokenAttrs = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

func readTokenizerConfig(path string) (*tokenizerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg tokenizerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	cfg.Specials = map[string]string{}
	for _, k := range specialTokenAttrs {
		if s := tokenContent(raw[k]); s != "" {
			cfg.Specials[k] = s
		}
	}
	var extra []json.RawMessage
	if err := json.Unmarshal(raw["additional_special_tokens"], &extra); err == nil {
		for _, e := range extra {
			cfg.AdditionalTokens = append(cfg.AdditionalTokens, tokenContent(e))
		}
	}
	return &cfg, nil
}

// tokenContent reads a special token written as a string or as an
// AddedToken object ({"content": ...}).
func tokenContent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return ""
}

// templateSet is a model's chat templates: one, or several by name
// ("default", "tool_use", ...) as tokenizer_config.json may list them.
type templateSet struct {
	byName map[string]*chatTemplate
	single *chatTemplate
}

// pick returns the template transformers would use for a request with or
// without tools.
func (ts *templateSet) pick(hasTools bool) (*chatTemplate, error) {
	if ts == nil {
		return nil, errNoTemplate
	}
	if ts.single != nil {
		return ts.single, nil
	}
	if hasTools {
		if t, ok := ts.byName["tool_use"]; ok {
			return t, nil
		}
	}
	if t, ok := ts.byName["default"]; ok {
		return t, nil
	}
	return nil, errNoTemplate
}

var errNoTemplate = errors.New("the model has no chat template (as of transformers v4.44 a default chat template is no longer allowed); set one")

// loadTemplates finds a model directory's chat template the way
// transformers and vLLM do: an explicit template (a file or the template
// text itself) first, then chat_template.jinja, then chat_template.json,
// then tokenizer_config.json's chat_template (a string or a list of named
// templates).
func loadTemplates(dir, explicit string, cfg *tokenizerConfig) (*templateSet, error) {
	if explicit != "" {
		src, err := readTemplateArg(explicit)
		if err != nil {
			return nil, err
		}
		t, err := compileTemplate(src)
		if err != nil {
			return nil, err
		}
		return &templateSet{single: t}, nil
	}
	if data, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
		t, err := compileTemplate(string(data))
		if err != nil {
			return nil, fmt.Errorf("chat_template.jinja: %w", err)
		}
		return &templateSet{single: t}, nil
	}
	if data, err := os.ReadFile(filepath.Join(dir, "chat_template.json")); err == nil {
		var obj struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("parse chat_template.json: %w", err)
		}
		return templatesFromJSON(obj.ChatTemplate)
	}
	if cfg != nil && len(cfg.ChatTemplate) > 0 && string(cfg.ChatTemplate) != "null" {
		return templatesFromJSON(cfg.ChatTemplate)
	}
	return nil, nil
}

func templatesFromJSON(raw json.RawMessage) (*templateSet, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		t, err := compileTemplate(s)
		if err != nil {
			return nil, err
		}
		return &templateSet{single: t}, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("chat_template is neither a string nor a list of named templates: %w", err)
	}
	ts := &templateSet{byName: map[string]*chatTemplate{}}
	for _, e := range list {
		t, err := compileTemplate(e.Template)
		if err != nil {
			return nil, fmt.Errorf("chat template %q: %w", e.Name, err)
		}
		ts.byName[e.Name] = t
	}
	return ts, nil
}

// readTemplateArg reads vLLM's --chat-template argument: template text when
// it holds Jinja syntax characters, otherwise a file path.
func readTemplateArg(arg string) (string, error) {
	if strings.ContainsAny(arg, "{}\n") {
		return arg, nil
	}
	data, err := os.ReadFile(arg)
	if err != nil {
		return "", fmt.Errorf("read chat template: %w", err)
	}
	return string(data), nil
}

// requestTemplate compiles a template sent in a request, keeping the last
// few compiled so a client that repeats its template does not pay again.
func (m *Model) requestTemplate(src string) (*chatTemplate, error) {
	m.reqMu.Lock()
	defer m.reqMu.Unlock()
	if t, ok := m.reqTemplates[src]; ok {
		return t, nil
	}
	t, err := compileTemplate(src)
	if err != nil {
		return nil, err
	}
	if m.reqTemplates == nil || len(m.reqTemplates) >= 16 {
		m.reqTemplates = map[string]*chatTemplate{}
	}
	m.reqTemplates[src] = t
	return t, nil
}
