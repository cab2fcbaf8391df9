package tokenize

import (
	"bytes"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// maxJSONDepth bounds the nesting of a request body, so a hostile body cannot
// exhaust the stack (Python's json module stops near the same depth).
const maxJSONDepth = 512

// decodeJSON decodes one JSON document into a template value, keeping the
// order of object keys (a duplicated key keeps its first position and its last
// value, as Python's json.loads does). Integers stay integers and numbers
// written with a fraction or an exponent become floats, as in Python, so
// tojson prints them back the way Jinja2 does.
func decodeJSON(data []byte) (jinja.Value, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	v, err := decodeValue(dec, 0)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return jinja.Undefined(), errors.New("invalid json: data after the top-level value")
	}
	return v, nil
}

func decodeValue(dec *jsontext.Decoder, depth int) (jinja.Value, error) {
	switch dec.PeekKind() {
	case '"':
		// Scalars are read as raw values: cheaper than tokens.
		raw, err := dec.ReadValue()
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("invalid json: %w", err)
		}
		return jinja.NewString(unquote(raw)), nil
	case '0':
		raw, err := dec.ReadValue()
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("invalid json: %w", err)
		}
		return numberValue(string(raw)), nil
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("invalid json: %w", err)
	}
	switch tok.Kind() {
	case 'n':
		return jinja.None(), nil
	case 'f':
		return jinja.NewBool(false), nil
	case 't':
		return jinja.NewBool(true), nil
	case '"':
		return jinja.NewString(tok.String()), nil
	case '0':
		return numberValue(tok.String()), nil
	case '[', '{':
		if depth >= maxJSONDepth {
			return jinja.Undefined(), fmt.Errorf("invalid json: nested deeper than %d", maxJSONDepth)
		}
	}
	if tok.Kind() == '[' {
		items := []jinja.Value{}
		for dec.PeekKind() != ']' {
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return jinja.Undefined(), err
			}
			items = append(items, v)
		}
		if _, err := dec.ReadToken(); err != nil {
			return jinja.Undefined(), fmt.Errorf("invalid json: %w", err)
		}
		return jinja.NewList(items), nil
	}
	if tok.Kind() != '{' {
		return jinja.Undefined(), fmt.Errorf("invalid json: unexpected %v", tok.Kind())
	}
	d := jinja.NewDict()
	dict := d.AsDict()
	for dec.PeekKind() != '}' {
		kt, err := dec.ReadToken()
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("invalid json: %w", err)
		}
		if kt.Kind() != '"' {
			return jinja.Undefined(), errors.New("invalid json: object key is not a string")
		}
		key := kt.String()
		v, err := decodeValue(dec, depth+1)
		if err != nil {
			return jinja.Undefined(), err
		}
		dict.Set(key, v)
	}
	if _, err := dec.ReadToken(); err != nil {
		return jinja.Undefined(), fmt.Errorf("invalid json: %w", err)
	}
	return d, nil
}

// unquote returns the text of a validated JSON string value.
func unquote(raw jsontext.Value) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	// Invalid UTF-8 (allowed) is replaced with U+FFFD, as encoding/json
	// does; AppendUnquote reports it, but the text is what we want.
	b, _ := jsontext.AppendUnquote(nil, raw)
	return string(b)
}

// numberValue converts a JSON number literal the way Python's json module
// does: an integer literal is an int (one beyond int64 falls back to a
// float here), anything with a fraction or exponent is a float.
func numberValue(s string) jinja.Value {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return jinja.NewInt(i)
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Out of range: Python gives inf; so does ParseFloat, with an error.
		return jinja.NewFloat(f)
	}
	return jinja.NewFloat(f)
}

// cloneValue deep-copies lists and dicts, so request preparation can edit a
// message without touching the caller's value.
func cloneValue(v jinja.Value) jinja.Value {
	switch {
	case v.IsList():
		src := v.AsList().Items
		items := make([]jinja.Value, len(src))
		for i, it := range src {
			items[i] = cloneValue(it)
		}
		return jinja.NewList(items)
	case v.IsDict():
		src := v.AsDict()
		d := jinja.NewDict()
		for _, k := range src.Keys {
			d.AsDict().Set(k, cloneValue(src.Data[k]))
		}
		return d
	}
	return v
}

// dictGet returns d[key] when v is a dict holding key.
func dictGet(v jinja.Value, key string) (jinja.Value, bool) {
	if !v.IsDict() {
		return jinja.Undefined(), false
	}
	return v.AsDict().Get(key)
}

// dictDelete removes key from a dict value, keeping the order of the rest.
func dictDelete(v jinja.Value, key string) {
	d := v.AsDict()
	if _, ok := d.Data[key]; !ok {
		return
	}
	delete(d.Data, key)
	for i, k := range d.Keys {
		if k == key {
			d.Keys = append(d.Keys[:i], d.Keys[i+1:]...)
			break
		}
	}
}
