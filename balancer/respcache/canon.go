package respcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Kinds of request the caches serve.
const (
	KindChat        = "chat"
	KindCompletions = "completions"
)

// dropped are top-level fields that never change an answer: they are left
// out of the key.
var dropped = map[string]bool{"user": true, "request_id": true, "metadata": true}

// defaults are top-level fields whose value, when it is the OpenAI (and
// vLLM) default, means the same as leaving them out; in canonical number
// form.
var defaults = map[string]string{
	"stream": "false", "n": "1", "top_p": "1", "presence_penalty": "0", "frequency_penalty": "0",
	"repetition_penalty": "1", "min_p": "0", "logprobs": "false", "echo": "false",
}

// Canonical returns the canonical form of a JSON request body: one
// object, keys sorted, no insignificant whitespace, numbers in one form
// (integers without a fraction, others in Go's shortest 'g' form), null and
// default-valued top-level fields and the fields in dropped left out, and a
// chat message's content made of one text part written as a string. Bodies
// that mean the same give the same bytes.
func Canonical(body []byte) ([]byte, error) {
	obj, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	normalizeTop(obj)
	return json.Marshal(obj)
}

// decodeObject decodes body as one JSON object with numbers kept as text.
func decodeObject(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode request body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode request body: data after the JSON object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("decode request body: not a JSON object")
	}
	return obj, nil
}

// normalizeTop normalizes a request object in place.
func normalizeTop(obj map[string]any) {
	for k, v := range obj {
		obj[k] = normalize(v)
	}
	for k, v := range obj {
		if v == nil || dropped[k] {
			delete(obj, k)
			continue
		}
		if d, ok := defaults[k]; ok && scalarText(v) == d {
			delete(obj, k)
		}
	}
	if msgs, ok := obj["messages"].([]any); ok {
		for _, m := range msgs {
			if mo, ok := m.(map[string]any); ok {
				normalizeMessage(mo)
			}
		}
	}
}

// normalizeMessage drops a message's null fields and writes content made of
// one text part as the string it is (vLLM joins text parts with "\n", so
// one part is that string).
func normalizeMessage(m map[string]any) {
	for k, v := range m {
		if v == nil {
			delete(m, k)
		}
	}
	parts, ok := m["content"].([]any)
	if !ok || len(parts) != 1 {
		return
	}
	p, ok := parts[0].(map[string]any)
	if !ok || len(p) != 2 || p["type"] != "text" {
		return
	}
	if s, ok := p["text"].(string); ok {
		m["content"] = s
	}
}

// normalize returns v with its numbers in canonical form, recursively.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		return canonNumber(x)
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

// canonNumber writes equal numbers alike: 1, 1.0 and 1e0 as 1; -0 as 0;
// other finite values in the shortest 'g' form. Integers beyond float64's
// exact range keep their literal.
func canonNumber(n json.Number) json.Number {
	s := string(n)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return n
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return json.Number(strconv.FormatInt(int64(f), 10))
	}
	if !strings.ContainsAny(s, ".eE") {
		return n
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// scalarText returns a canonical scalar's JSON text ("" for others).
func scalarText(v any) string {
	switch x := v.(type) {
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// Request is what the caches read from one request.
type Request struct {
	// Scope is the tenant; Model the canonical model name.
	Scope, Model string
	// Stream reports whether the client asked for a stream.
	Stream bool
	// Deterministic reports temperature 0 or a seed.
	Deterministic bool
	// Key is the exact cache's key: the hash of scope, model, kind and the
	// canonical body.
	Key string
	// Partition is the semantic cache's partition: the hash of scope,
	// model, kind and the canonical body without the question; only
	// questions in one partition can answer each other.
	Partition string
	// Question is the text the semantic cache embeds: the last message of
	// a chat when it is the user's, a completion's string prompt ("":
	// none; the semantic cache is bypassed).
	Question string
}

// keyVersion starts every hashed key: a change of canonical form changes it.
const keyVersion = "respcache/v1"

// ParseRequest reads a chat or completions body (model already resolved
// to its canonical name) for scope.
func ParseRequest(kind, scope, model string, body []byte) (Request, error) {
	obj, err := decodeObject(body)
	if err != nil {
		return Request{}, err
	}
	normalizeTop(obj)
	rq := Request{Scope: scope, Model: model, Stream: obj["stream"] == true}
	if t, ok := obj["temperature"].(json.Number); ok && t == "0" {
		rq.Deterministic = true
	}
	if _, ok := obj["seed"]; ok {
		rq.Deterministic = true
	}
	full, err := json.Marshal(obj)
	if err != nil {
		return Request{}, fmt.Errorf("encode canonical body: %w", err)
	}
	rq.Key = hashKey(kind, scope, model, full)
	switch kind {
	case KindChat:
		if msgs, ok := obj["messages"].([]any); ok && len(msgs) > 0 {
			if last, ok := msgs[len(msgs)-1].(map[string]any); ok && last["role"] == "user" {
				if s, ok := last["content"].(string); ok {
					rq.Question = s
					obj["messages"] = msgs[:len(msgs)-1]
				}
			}
		}
	case KindCompletions:
		if s, ok := obj["prompt"].(string); ok {
			rq.Question = s
			delete(obj, "prompt")
		}
	}
	if rq.Question != "" {
		rest, err := json.Marshal(obj)
		if err != nil {
			return Request{}, fmt.Errorf("encode canonical body: %w", err)
		}
		rq.Partition = hashKey(kind+"/semantic", scope, model, rest)
	}
	return rq, nil
}

// hashKey hashes the parts, each length-prefixed so that no two part lists
// give one input.
func hashKey(kind, scope, model string, canonical []byte) string {
	h := sha256.New()
	for _, p := range [][]byte{[]byte(keyVersion), []byte(kind), []byte(scope), []byte(model), canonical} {
		var n [8]byte
		for i := range 8 {
			n[i] = byte(len(p) >> (8 * i))
		}
		h.Write(n[:])
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Tag is the short hash that names a scope or a model inside a store key,
// so that purges can match them without escaping.
func Tag(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
