package tokenize

import (
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// textPartTypes are the content parts vLLM turns into text.
var textPartTypes = map[string]string{
	"text": "text", "input_text": "text", "output_text": "text",
	"refusal": "refusal", "thinking": "thinking",
}

// parseMessage turns one request message into the message the template
// sees, as vLLM's chat_utils does: content parts flattened to one string
// joined with newlines (format "string") or wrapped as text parts (format
// "openai"); tool calls, reasoning, tool_call_id and name carried over.
// Image, audio and video parts are not supported: a multimodal request
// is an error here, and the router routes it without a prediction.
func parseMessage(mv jinja.Value, format contentFormat) (jinja.Value, error) {
	if !mv.IsDict() {
		return jinja.Undefined(), errNotObject
	}
	roleV, ok := dictGet(mv, "role")
	if !ok || !roleV.IsString() {
		return jinja.Undefined(), fmt.Errorf("role must be a string")
	}
	role := roleV.AsString()
	var parts []jinja.Value
	if c, ok := dictGet(mv, "content"); ok && !c.IsNone() {
		switch {
		case c.IsString():
			parts = []jinja.Value{c}
		case c.IsList():
			parts = c.AsList().Items
		default:
			return jinja.Undefined(), fmt.Errorf("content must be a string or a list of parts")
		}
	}
	var texts []string
	for i, p := range parts {
		if p.IsString() {
			texts = append(texts, p.AsString())
			continue
		}
		if !p.IsDict() {
			return jinja.Undefined(), fmt.Errorf("content[%d] is not an object", i)
		}
		tv, _ := dictGet(p, "type")
		field, ok := "", false
		if tv.IsString() {
			field, ok = textPartTypes[tv.AsString()]
		}
		if !ok {
			return jinja.Undefined(), fmt.Errorf("content[%d]: unsupported content part type %s", i, tv.String())
		}
		t, present := dictGet(p, field)
		if !present || t.IsNone() {
			continue // vLLM skips a text part without text
		}
		if !t.IsString() {
			return jinja.Undefined(), fmt.Errorf("content[%d].%s must be a string", i, field)
		}
		texts = append(texts, t.AsString())
	}

	out := jinja.NewDict()
	d := out.AsDict()
	d.Set("role", roleV)
	if format == contentOpenAI && role != "tool" {
		d.Set("content", textParts(texts))
	} else {
		// A tool message's text parts are always joined (vLLM normalises
		// them for templates that expect a string).
		d.Set("content", jinja.NewString(strings.Join(texts, "\n")))
	}
	switch role {
	case "assistant":
		if tc, ok := dictGet(mv, "tool_calls"); ok && !tc.IsNone() {
			d.Set("tool_calls", cloneValue(tc))
		}
		r, ok := dictGet(mv, "reasoning")
		if !ok || r.IsNone() {
			r, ok = dictGet(mv, "reasoning_content")
		}
		if ok && !r.IsNone() {
			d.Set("reasoning", r)
			d.Set("reasoning_content", r)
		}
	case "tool":
		if id, ok := dictGet(mv, "tool_call_id"); ok {
			d.Set("tool_call_id", id)
		}
	}
	if n, ok := dictGet(mv, "name"); ok && n.IsString() {
		d.Set("name", n)
	}
	if task, ok := dictGet(mv, "task"); ok && task.IsString() {
		d.Set("task", task)
	}
	if role == "developer" {
		tools, ok := dictGet(mv, "tools")
		if !ok {
			tools = jinja.None()
		}
		d.Set("tools", cloneValue(tools))
	}
	return out, nil
}

func textParts(texts []string) jinja.Value {
	items := make([]jinja.Value, len(texts))
	for i, t := range texts {
		p := jinja.NewDict()
		p.AsDict().Set("type", jinja.NewString("text"))
		p.AsDict().Set("text", jinja.NewString(t))
		items[i] = p
	}
	return jinja.NewList(items)
}

// postprocessMessages parses tool-call arguments from JSON strings to
// objects, as vLLM does for tool-use templates: invalid or empty JSON
// becomes {}, and an empty tool_calls list is dropped.
func postprocessMessages(conv []jinja.Value) error {
	for i, m := range conv {
		if r, _ := dictGet(m, "role"); !r.IsString() || r.AsString() != "assistant" {
			continue
		}
		tc, ok := dictGet(m, "tool_calls")
		if !ok || !tc.IsList() {
			continue
		}
		if tc.AsList().Len() == 0 {
			dictDelete(m, "tool_calls")
			continue
		}
		for j, call := range tc.AsList().Items {
			fn, ok := dictGet(call, "function")
			if !ok || !fn.IsDict() {
				return badRequest("messages[%d].tool_calls[%d].function must be an object", i, j)
			}
			args, _ := dictGet(fn, "arguments")
			switch {
			case args.IsString():
				v, err := decodeJSON([]byte(args.AsString()))
				if err != nil {
					v = jinja.NewDict()
				}
				fn.AsDict().Set("arguments", v)
			case args.IsDict(), args.IsList():
			default:
				fn.AsDict().Set("arguments", jinja.NewDict())
			}
		}
	}
	return nil
}

// dumpTool returns a tool as vLLM's pydantic model dumps it:
// {"type", "function": {"name", "description", "parameters", extras...},
// extras...}, with description and parameters null when absent.
func dumpTool(t jinja.Value) (jinja.Value, error) {
	if !t.IsDict() {
		return jinja.Undefined(), badRequest("a tool must be an object")
	}
	fn, ok := dictGet(t, "function")
	if !ok || !fn.IsDict() {
		return jinja.Undefined(), badRequest("a tool needs a function object")
	}
	name, ok := dictGet(fn, "name")
	if !ok || !name.IsString() {
		return jinja.Undefined(), badRequest("a tool function needs a string name")
	}
	f := jinja.NewDict()
	fd := f.AsDict()
	fd.Set("name", name)
	for _, k := range []string{"description", "parameters"} {
		v, ok := dictGet(fn, k)
		if !ok {
			v = jinja.None()
		}
		fd.Set(k, cloneValue(v))
	}
	for _, k := range fn.AsDict().Keys {
		if !fd.Has(k) {
			fd.Set(k, cloneValue(fn.AsDict().Data[k]))
		}
	}
	out := jinja.NewDict()
	od := out.AsDict()
	typ, ok := dictGet(t, "type")
	if !ok {
		typ = jinja.NewString("function")
	}
	od.Set("type", typ)
	od.Set("function", f)
	for _, k := range t.AsDict().Keys {
		if !od.Has(k) {
			od.Set(k, cloneValue(t.AsDict().Data[k]))
		}
	}
	return out, nil
}
