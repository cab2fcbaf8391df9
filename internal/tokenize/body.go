package tokenize

import (
	"fmt"

	"github.com/ardanlabs/jinja"
)

// Body is a chat or completions request body decoded once, so that a caller
// that needs some of its fields (the balancer reads model and cache_salt)
// and its prompt does not decode it twice: DecodeBody, then String for the
// fields, then ChatBody or CompletionBody for the prompt. Tokenizing a Body
// does not change it, so it may be tokenized more than once, and its methods
// are safe for concurrent use.
type Body struct {
	root jinja.Value // a dict
}

// DecodeBody decodes a request body that must be a JSON object, keeping key
// order; a repeated key keeps its last value and invalid UTF-8 in strings
// becomes U+FFFD, as in Python's json module and encoding/json. A body the
// engine would reject returns a *RequestError.
func DecodeBody(body []byte) (*Body, error) {
	root, err := decodeJSON(body)
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	if !root.IsDict() {
		return nil, badRequest("the body is not a JSON object")
	}
	return &Body{root: root}, nil
}

// String returns the top-level field name as a string. ok is false when the
// field is absent or null; err is non-nil (and names the field) when it
// holds anything but a string.
func (b *Body) String(name string) (s string, ok bool, err error) {
	v, present := dictGet(b.root, name)
	switch {
	case !present || v.IsNone():
		return "", false, nil
	case !v.IsString():
		return "", false, fmt.Errorf("%s must be a string", name)
	}
	return v.AsString(), true, nil
}

// Bool returns the top-level field name as a boolean: ok is false when the
// field is absent, null or not a boolean.
func (b *Body) Bool(name string) (v, ok bool) {
	x, present := dictGet(b.root, name)
	if !present || !x.IsBool() {
		return false, false
	}
	return x.AsBool(), true
}

// Int returns the top-level field name as an integer; ok is false when the
// field is absent or holds anything but an integer.
func (b *Body) Int(name string) (v int64, ok bool) {
	x, present := dictGet(b.root, name)
	if !present || !x.IsInt() {
		return 0, false
	}
	return x.AsInt(), true
}

// OpensConversation reports whether the body is a chat request whose
// messages hold no assistant message: the first request of a conversation,
// so nothing of its prompt but what it shares with others (a system
// prompt, tools, examples) can be in any engine's cache.
func (b *Body) OpensConversation() bool {
	n, ok := b.assistantMessages()
	return ok && n == 0
}

// ContinuesConversation reports whether the body is a chat request whose
// messages hold an assistant message: a later turn of a conversation.
func (b *Body) ContinuesConversation() bool {
	n, ok := b.assistantMessages()
	return ok && n > 0
}

// assistantMessages counts the assistant messages of a chat request; ok is
// false unless the body has a non-empty list of messages, each with a
// string role.
func (b *Body) assistantMessages() (n int, ok bool) {
	msgs, present := dictGet(b.root, "messages")
	if !present || !msgs.IsList() || msgs.AsList().Len() == 0 {
		return 0, false
	}
	for _, m := range msgs.AsList().Items {
		r, _ := dictGet(m, "role")
		if !r.IsString() {
			return 0, false
		}
		if r.AsString() == "assistant" {
			n++
		}
	}
	return n, true
}

// ChatBody is Chat for a decoded body.
func (m *Model) ChatBody(b *Body) (Prompt, error) {
	if m.sim {
		return m.simChat(b.root)
	}
	req, err := m.prepareChat(b.root)
	if err != nil {
		return Prompt{}, err
	}
	return m.encodeChat(req)
}

// CompletionBody is Completion for a decoded body.
func (m *Model) CompletionBody(b *Body) ([]Prompt, error) {
	return m.completion(b.root)
}
