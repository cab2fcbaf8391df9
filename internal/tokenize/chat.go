package tokenize

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/ardanlabs/jinja"
)

// RequestError is a request the engine would reject with 400 (a malformed
// body, an unsupported content part, a template that raises). The router
// routes such a request without a prediction.
type RequestError struct{ Err error }

// Error returns the reason the request is rejected.
func (e *RequestError) Error() string { return "bad chat request: " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *RequestError) Unwrap() error { return e.Err }

func badRequest(format string, args ...any) error {
	return &RequestError{Err: fmt.Errorf(format, args...)}
}

// hfBaseParams are the parameters of transformers' apply_chat_template;
// vLLM lets chat_template_kwargs set them even when the template does not
// name them.
var hfBaseParams = map[string]bool{
	"conversation": true, "tools": true, "documents": true, "chat_template": true,
	"add_generation_prompt": true, "continue_final_message": true, "tokenize": true,
	"padding": true, "truncation": true, "max_length": true, "return_tensors": true,
	"return_dict": true, "return_assistant_tokens_mask": true, "tokenizer_kwargs": true,
}

// chatRequest is the prepared form of an OpenAI chat request.
type chatRequest struct {
	tmpl             *chatTemplate
	vars             map[string]jinja.Value
	conversation     []jinja.Value
	continueFinal    bool
	addSpecialTokens bool
}

// prepareChat prepares a decoded body (a dict) as vLLM does before it calls
// transformers' apply_chat_template. It does not modify root.
func (m *Model) prepareChat(root jinja.Value) (*chatRequest, error) {
	msgsV, ok := dictGet(root, "messages")
	if !ok || !msgsV.IsList() {
		return nil, badRequest("messages must be a list")
	}
	tools, err := dumpTools(root)
	if err != nil {
		return nil, err
	}
	tmpl, err := m.pickTemplate(root, !tools.IsNone())
	if err != nil {
		return nil, err
	}

	agp, err := boolField(root, "add_generation_prompt", true)
	if err != nil {
		return nil, err
	}
	cfm, err := boolField(root, "continue_final_message", false)
	if err != nil {
		return nil, err
	}
	ast, err := boolField(root, "add_special_tokens", false)
	if err != nil {
		return nil, err
	}
	if agp && cfm {
		return nil, badRequest("cannot set both continue_final_message and add_generation_prompt to true")
	}

	items := msgsV.AsList().Items
	conv := make([]jinja.Value, 0, len(items))
	for i, mv := range items {
		msg, err := parseMessage(mv, tmpl.format)
		if err != nil {
			return nil, badRequest("messages[%d]: %v", i, err)
		}
		conv = append(conv, msg)
	}
	if err := postprocessMessages(conv); err != nil {
		return nil, err
	}

	vars, cfm, err := m.templateVars(root, tmpl, tools, agp, cfm)
	if err != nil {
		return nil, err
	}
	vars["messages"] = jinja.NewList(conv)
	return &chatRequest{tmpl: tmpl, vars: vars, conversation: conv, continueFinal: cfm, addSpecialTokens: ast}, nil
}

// dumpTools returns the request's tools as vLLM dumps them, or None.
func dumpTools(root jinja.Value) (jinja.Value, error) {
	tv, ok := dictGet(root, "tools")
	if !ok || tv.IsNone() {
		return jinja.None(), nil
	}
	if !tv.IsList() {
		return jinja.Undefined(), badRequest("tools must be a list")
	}
	dumped := make([]jinja.Value, 0, tv.AsList().Len())
	for _, t := range tv.AsList().Items {
		d, err := dumpTool(t)
		if err != nil {
			return jinja.Undefined(), err
		}
		dumped = append(dumped, d)
	}
	return jinja.NewList(dumped), nil
}

// pickTemplate returns the request's own template when the model trusts
// request templates, else the model's (its tool_use template for a request
// with tools, where it has one).
func (m *Model) pickTemplate(root jinja.Value, hasTools bool) (*chatTemplate, error) {
	src, ok := dictGet(root, "chat_template")
	if !ok || src.IsNone() {
		t, err := m.templates.pick(hasTools)
		if err != nil {
			return nil, &RequestError{Err: err}
		}
		return t, nil
	}
	if !m.opts.TrustRequestChatTemplate {
		return nil, badRequest("chat_template is not allowed in a request unless the server trusts request chat templates")
	}
	if !src.IsString() {
		return nil, badRequest("chat_template must be a string")
	}
	t, err := m.requestTemplate(src.AsString())
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	return t, nil
}

// templateVars builds the template's variables as vLLM and transformers
// do: the special tokens, then vLLM's kwargs (the generation flags, tools,
// documents) with the request's chat_template_kwargs over them, keeping only
// the kwargs the template can use. It also returns the final
// continue_final_message flag.
func (m *Model) templateVars(root jinja.Value, tmpl *chatTemplate, tools jinja.Value, agp, cfm bool) (map[string]jinja.Value, bool, error) {
	kw := jinja.NewDict().AsDict()
	kw.Set("add_generation_prompt", jinja.NewBool(agp))
	kw.Set("continue_final_message", jinja.NewBool(cfm))
	kw.Set("tools", tools)
	docs := jinja.None()
	if dv, ok := dictGet(root, "documents"); ok {
		docs = dv
	}
	kw.Set("documents", docs)
	if ck, ok := dictGet(root, "chat_template_kwargs"); ok && !ck.IsNone() {
		if !ck.IsDict() {
			return nil, false, badRequest("chat_template_kwargs must be an object")
		}
		d := ck.AsDict()
		for _, k := range d.Keys {
			switch k {
			case "chat_template", "tokenize":
				return nil, false, badRequest("unexpected chat template kwarg %q", k)
			case "messages", "conversation":
				return nil, false, badRequest("chat template kwarg %q clashes with the conversation", k)
			}
			kw.Set(k, d.Data[k])
		}
	}
	vars := make(map[string]jinja.Value, len(m.specials)+len(kw.Keys)+1)
	for k, v := range m.specials {
		vars[k] = cloneValue(v) // a template must not edit the model's copy
	}
	for _, k := range kw.Keys {
		if !tmpl.words[k] && !hfBaseParams[k] {
			continue // vLLM drops kwargs the template cannot use
		}
		switch k {
		case "continue_final_message", "conversation", "padding", "truncation", "max_length",
			"return_tensors", "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs":
			continue // consumed by apply_chat_template, not template variables
		}
		vars[k] = kw.Data[k]
	}
	// The kwargs may have changed either flag (both are apply_chat_template
	// parameters, so always accepted).
	v, _ := kw.Get("continue_final_message")
	cfm = v.IsTruthy()
	agp = vars["add_generation_prompt"].IsTruthy()
	vars["add_generation_prompt"] = jinja.NewBool(agp)
	if agp && cfm {
		return nil, false, badRequest("continue_final_message and add_generation_prompt are not compatible")
	}
	return vars, cfm, nil
}

func boolField(root jinja.Value, key string, def bool) (bool, error) {
	v, ok := dictGet(root, key)
	if !ok || v.IsNone() {
		return def, nil
	}
	if !v.IsBool() {
		return false, badRequest("%s must be a boolean", key)
	}
	return v.AsBool(), nil
}

// render renders a prepared request, applying continue_final_message the
// way transformers does: the text is cut right after the final message.
func (r *chatRequest) render() (text string, err error) {
	// The template engine is third-party code running on client input: a
	// panic in it must fail this request, not the router.
	defer func() {
		if p := recover(); p != nil {
			text, err = "", &RequestError{Err: fmt.Errorf("render chat template: panic: %v", p)}
		}
	}()
	out, err := r.tmpl.tmpl.RenderValues(r.vars)
	if err != nil {
		return "", &RequestError{Err: fmt.Errorf("render chat template: %w", err)}
	}
	if !r.continueFinal {
		return out, nil
	}
	if len(r.conversation) == 0 {
		return "", badRequest("continue_final_message needs a final message")
	}
	final, ok := finalText(r.conversation[len(r.conversation)-1])
	if !ok {
		return "", badRequest("continue_final_message is set but there is no text to continue in the final message")
	}
	stripped := pyStrip(final)
	loc := strings.LastIndex(out, stripped)
	if loc < 0 {
		return "", badRequest("continue_final_message is set but the final message does not appear in the rendered chat")
	}
	left := pyLStrip(final)
	if strings.HasPrefix(out[loc:], left) && left == final {
		return out[:loc+len(left)], nil
	}
	return out[:loc+len(stripped)], nil
}

func finalText(msg jinja.Value) (string, bool) {
	c, ok := dictGet(msg, "content")
	if !ok {
		return "", false
	}
	if c.IsString() {
		return c.AsString(), true
	}
	if c.IsList() {
		items := c.AsList().Items
		for i := len(items) - 1; i >= 0; i-- {
			if t, ok := dictGet(items[i], "text"); ok {
				if t.IsString() {
					return t.AsString(), true
				}
				return "", false
			}
		}
	}
	return "", false
}

// pyIsSpace is Python's str.isspace for one rune.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

func pyStrip(s string) string  { return strings.TrimFunc(s, pyIsSpace) }
func pyLStrip(s string) string { return strings.TrimLeftFunc(s, pyIsSpace) }

var errNotObject = errors.New("not a JSON object")
