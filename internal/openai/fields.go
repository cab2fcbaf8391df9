package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// fields decodes top-level request fields one at a time, so a wrong type is
// reported with the parameter's name (as vLLM's pydantic validation does) and
// unknown fields are kept untouched.
type fields struct {
	m   map[string]json.RawMessage
	err *Error
}

func newFields(body []byte) (*fields, *Error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, ValidationError("body", "missing", "Field required")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		if trimmed[0] != '{' && json.Valid(trimmed) {
			return nil, ValidationError("body", "model_attributes_type", "Input should be a valid dictionary or object to extract fields from")
		}
		return nil, ValidationError("body", "json_invalid", "JSON decode error")
	}
	if m == nil { // body "null"
		return nil, ValidationError("body", "model_attributes_type", "Input should be a valid dictionary or object to extract fields from")
	}
	return &fields{m: m}, nil
}

// present reports whether name is set to something other than null.
func (f *fields) present(name string) bool {
	raw, ok := f.m[name]
	return ok && !isNull(raw)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func (f *fields) fail(name, kind, msg string) {
	if f.err == nil {
		f.err = ValidationError("body."+name, kind, msg)
	}
}

func (f *fields) raw(name string) (json.RawMessage, bool) {
	raw, ok := f.m[name]
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

func (f *fields) str(name string) (string, bool) {
	raw, ok := f.raw(name)
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		f.fail(name, "string_type", "Input should be a valid string")
		return "", false
	}
	return s, true
}

func (f *fields) boolean(name string, def bool) bool {
	raw, ok := f.raw(name)
	if !ok {
		return def
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		f.fail(name, "bool_type", "Input should be a valid boolean")
		return def
	}
	return b
}

// integer reads an integer; a float with no fraction is accepted as pydantic does.
func (f *fields) integer(name string) (int, bool) {
	raw, ok := f.raw(name)
	if !ok {
		return 0, false
	}
	v, ok := parseInt(raw)
	if !ok {
		f.fail(name, "int_type", "Input should be a valid integer")
		return 0, false
	}
	return v, true
}

func parseInt(raw json.RawMessage) (int, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		if i > math.MaxInt32*int64(1<<20) || i < -math.MaxInt32*int64(1<<20) {
			return 0, false
		}
		return int(i), true
	}
	fl, err := n.Float64()
	if err != nil || fl != math.Trunc(fl) || math.Abs(fl) > 1<<50 {
		return 0, false
	}
	return int(fl), true
}

func (f *fields) number(name string) (float64, bool) {
	raw, ok := f.raw(name)
	if !ok {
		return 0, false
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		f.fail(name, "float_type", "Input should be a valid number")
		return 0, false
	}
	return v, true
}

func (f *fields) tokenIDs(name string) []uint32 {
	raw, ok := f.raw(name)
	if !ok {
		return nil
	}
	ids, ok := parseTokenIDs(raw)
	if !ok {
		f.fail(name, "list_type", "Input should be a valid list of non-negative integers")
		return nil
	}
	return ids
}

func parseTokenIDs(raw json.RawMessage) ([]uint32, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false
	}
	ids := make([]uint32, len(items))
	for i, it := range items {
		v, ok := parseInt(it)
		if !ok || v < 0 || v > math.MaxUint32 {
			return nil, false
		}
		ids[i] = uint32(v)
	}
	return ids, true
}

// stop reads "stop": a string, a list of strings, or null.
func (f *fields) stop(name string) []string {
	raw, ok := f.raw(name)
	if !ok {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		f.fail(name, "list_type", "Input should be a valid string or list of strings")
		return nil
	}
	return list
}

func (f *fields) object(name string) map[string]json.RawMessage {
	raw, ok := f.raw(name)
	if !ok {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		f.fail(name, "dict_type", "Input should be a valid dictionary")
		return nil
	}
	return m
}

func (f *fields) list(name string) ([]json.RawMessage, bool) {
	raw, ok := f.raw(name)
	if !ok {
		return nil, false
	}
	var l []json.RawMessage
	if err := json.Unmarshal(raw, &l); err != nil {
		f.fail(name, "list_type", "Input should be a valid list")
		return nil, false
	}
	return l, true
}
