package balancer

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// TextPrefixConfig configures a model's text prefix identity: how a model
// with no tokenizer is still routed cache-aware (docs/routing.md#text-prefix-identity).
type TextPrefixConfig struct {
	// Enabled routes a model without a tokenizer on the text prefix
	// identity of its requests; false routes it cache-blind.
	Enabled bool `yaml:"enabled"`
	// BytesPerToken is the text bytes one token is assumed to take: the
	// prompt token estimate is the rendered text's bytes over it, and a
	// chunk of block_size × bytes_per_token bytes stands in for a KV block.
	BytesPerToken int `yaml:"bytes_per_token"`
}

// maxBytesPerToken bounds TextPrefixConfig.BytesPerToken.
const maxBytesPerToken = 64

func defaultTextPrefix() TextPrefixConfig {
	return TextPrefixConfig{Enabled: true, BytesPerToken: kvblock.DefaultBytesPerToken}
}

func (c TextPrefixConfig) validate(path string) []error {
	if c.BytesPerToken < 1 || c.BytesPerToken > maxBytesPerToken {
		return []error{fmt.Errorf("%s.bytes_per_token must be in [1, %d], got %d", path, maxBytesPerToken, c.BytesPerToken)}
	}
	return nil
}

// Separators of the rendered text: they keep "ab"+"c" and "a"+"bc" apart.
const (
	textFieldSep   = 0x1f // between the fields of a message
	textMessageEnd = 0x1e // after each message (and after the tools)
)

// textBody is the part of a chat or completions body the text identity reads.
// Other fields are ignored.
type textBody struct {
	Messages jsontext.Value `json:"messages"`
	Tools    jsontext.Value `json:"tools"`
	Prompt   jsontext.Value `json:"prompt"`
}

// textMessage is one chat message, with the fields a chat template renders.
type textMessage struct {
	Role       string         `json:"role"`
	Name       string         `json:"name"`
	Content    jsontext.Value `json:"content"`
	ToolCalls  jsontext.Value `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

// textPart is one part of a message's content list.
type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

var textJSON = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// renderText writes the text a chat (chat=true) or completions body's prompt
// is identified by to h: for chat the tools (compact JSON), then per message
// its role, name, text content (a non-text part as its compact JSON, so an
// image names its bytes), tool calls and tool call id; for completions the
// prompt string. A completions prompt of token ids needs no tokenizer: they
// are returned as ids instead, for the exact block hashes. reason is why the
// body has no identity ("" when it has one): reasonUnsupported for a body
// that is not a request the balancer understands, reasonMultiPrompt for
// several prompts.
func renderText(h *kvblock.TextHasher, chat bool, body []byte) (ids []uint32, reason string) {
	var b textBody
	if err := json.Unmarshal(body, &b, textJSON); err != nil {
		return nil, reasonUnsupported
	}
	if !chat {
		return renderPrompt(h, b.Prompt)
	}
	if len(b.Messages) == 0 || b.Messages.Kind() != '[' {
		return nil, reasonUnsupported
	}
	var msgs []textMessage
	if err := json.Unmarshal(b.Messages, &msgs, textJSON); err != nil || len(msgs) == 0 {
		return nil, reasonUnsupported
	}
	if k := b.Tools.Kind(); len(b.Tools) > 0 && k != 'n' {
		if err := b.Tools.Compact(); err != nil {
			return nil, reasonUnsupported
		}
		h.Write(b.Tools)
		_ = h.WriteByte(textMessageEnd)
	}
	for i := range msgs {
		m := &msgs[i]
		h.WriteString(m.Role)
		_ = h.WriteByte(textFieldSep)
		h.WriteString(m.Name)
		_ = h.WriteByte(textFieldSep)
		if !renderContent(h, m.Content) {
			return nil, reasonUnsupported
		}
		_ = h.WriteByte(textFieldSep)
		if len(m.ToolCalls) > 0 && m.ToolCalls.Kind() != 'n' {
			if err := m.ToolCalls.Compact(); err != nil {
				return nil, reasonUnsupported
			}
			h.Write(m.ToolCalls)
		}
		_ = h.WriteByte(textFieldSep)
		h.WriteString(m.ToolCallID)
		_ = h.WriteByte(textMessageEnd)
	}
	return nil, ""
}

// renderContent writes a message's content: a string, null, or a list of
// parts. It reports false for anything else.
func renderContent(h *kvblock.TextHasher, c jsontext.Value) bool {
	switch {
	case len(c) == 0 || c.Kind() == 'n':
		return true
	case c.Kind() == '"':
		var s string
		if json.Unmarshal(c, &s, textJSON) != nil {
			return false
		}
		h.WriteString(s)
		return true
	case c.Kind() != '[':
		return false
	}
	var parts []jsontext.Value
	if json.Unmarshal(c, &parts, textJSON) != nil {
		return false
	}
	for _, raw := range parts {
		var p textPart
		if raw.Kind() != '{' || json.Unmarshal(raw, &p, textJSON) != nil {
			return false
		}
		if p.Type == "text" {
			h.WriteString(p.Text)
			continue
		}
		if raw.Compact() != nil {
			return false
		}
		h.Write(raw)
	}
	return true
}

// renderPrompt writes a completions prompt: a string or a list of one
// string; a list of token ids (or a list of one) is returned as ids.
func renderPrompt(h *kvblock.TextHasher, raw jsontext.Value) ([]uint32, string) {
	if len(raw) == 0 {
		return nil, reasonUnsupported
	}
	var s string
	if raw.Kind() == '"' {
		if json.Unmarshal(raw, &s, textJSON) != nil {
			return nil, reasonUnsupported
		}
		h.WriteString(s)
		return nil, ""
	}
	if raw.Kind() != '[' {
		return nil, reasonUnsupported
	}
	var list []jsontext.Value
	if json.Unmarshal(raw, &list, textJSON) != nil || len(list) == 0 {
		return nil, reasonUnsupported
	}
	if k := list[0].Kind(); k == '0' {
		var ids []uint32
		if json.Unmarshal(raw, &ids) != nil {
			return nil, reasonUnsupported
		}
		return ids, ""
	}
	if len(list) > 1 {
		return nil, reasonMultiPrompt
	}
	switch list[0].Kind() {
	case '"':
		return renderPrompt(h, list[0])
	case '[':
		var ids []uint32
		if json.Unmarshal(list[0], &ids) != nil {
			return nil, reasonUnsupported
		}
		return ids, ""
	}
	return nil, reasonUnsupported
}

// textPrefix is a request's text prefix identity.
type textPrefix struct {
	// hashes are the chained chunk hashes (kvblock.TextHasher), or the
	// exact block hashes when exact is set.
	hashes []kvblock.Hash
	// tokens is the prompt token estimate (exact: the count).
	tokens int
	// exact reports whether the prompt was token ids: its hashes are the
	// engine's blocks and tokens the true count.
	exact bool
}

// textPrefix computes the text prefix identity of a chat or completions body
// for m, appending its hashes to dst, or returns the reason it has none.
func (m *model) textPrefix(dst []kvblock.Hash, chat bool, body []byte, cacheSalt string) (textPrefix, string) {
	base := m.base
	if base == "" {
		base = m.cfg.Name
	}
	bpt := max(m.cfg.TextPrefix.BytesPerToken, 1)
	var h kvblock.TextHasher
	h.Reset(dst, kvblock.TextSeed(base, m.lora, cacheSalt), m.cfg.BlockSize*bpt)
	ids, reason := renderText(&h, chat, body)
	switch {
	case reason != "":
		return textPrefix{}, reason
	case ids != nil:
		return textPrefix{hashes: m.hashes(dst, ids, cacheSalt), tokens: len(ids), exact: true}, ""
	case h.Len() == 0:
		return textPrefix{}, reasonUnsupported
	}
	return textPrefix{hashes: h.Hashes(), tokens: (h.Len() + bpt - 1) / bpt}, ""
}

// prepareText routes rq, whose model has no tokenizer, on the text prefix
// identity of its body: rq's hashes (in sc.hashes) and token estimate, or
// the exact ones for a completions prompt of token ids. It returns the reason
// the body has none ("" when it has one).
func (b *Balancer) prepareText(rq *request, p parsed, sc *scratch) string {
	m := rq.model
	tp, reason := m.textPrefix(sc.hashes[:0], rq.kind == kindChat, p.body, p.salt)
	if reason != "" {
		return reason
	}
	sc.hashes = tp.hashes
	rq.hashes, rq.tokens, rq.estimated = tp.hashes, max(tp.tokens, 1), !tp.exact
	if tp.exact {
		b.m.promptTokens.WithLabelValues(m.cfg.Name).Observe(float64(tp.tokens))
	} else {
		b.m.textPrefix.WithLabelValues(m.cfg.Name).Inc()
	}
	return ""
}

// settleHashes returns the hashes whose overlay placement the first byte
// settles (route.Overlay.Settle): none for a text prefix identity, which no
// replica's summary can confirm, so its placement is remembered for the
// overlay's text_ttl instead.
func (rq *request) settleHashes() []kvblock.Hash {
	if rq.estimated {
		return nil
	}
	return rq.hashes
}
