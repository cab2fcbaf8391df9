package sidecar

import (
	"encoding/json"
	"fmt"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize"
	"github.com/prometheus/client_golang/prometheus"
)

// Tokenizer turns a request body's prompt into the token ids the engine will
// run: the chat template applied for chat requests, special tokens as the
// engine adds them. *tokenize.Model (internal/tokenize) is the production
// implementation, for "builtin:sim" and for Hugging Face model directories.
// Implementations must be safe for concurrent use.
type Tokenizer interface {
	// Chat returns the prompt token ids of a chat completions request body.
	Chat(body []byte) ([]uint32, error)
	// Completion returns the token ids of each prompt of a completions
	// request body.
	Completion(body []byte) ([][]uint32, error)
}

// modelTokenizer adapts internal/tokenize's Model to Tokenizer.
type modelTokenizer struct{ m *tokenize.Model }

var _ Tokenizer = modelTokenizer{}

func (t modelTokenizer) Chat(body []byte) ([]uint32, error) {
	p, err := t.m.Chat(body)
	return p.TokenIDs, err
}

func (t modelTokenizer) Completion(body []byte) ([][]uint32, error) {
	ps, err := t.m.Completion(body)
	if err != nil {
		return nil, err
	}
	ids := make([][]uint32, len(ps))
	for i, p := range ps {
		ids[i] = p.TokenIDs
	}
	return ids, nil
}

// tokenizerCacheBytes bounds the tokenizer's cache of repeated prompt pieces.
const tokenizerCacheBytes = 16 << 20

// loadTokenizer loads spec ("builtin:sim" or a model directory); "" means no
// tokenizer (nil).
func loadTokenizer(spec string, reg prometheus.Registerer) (Tokenizer, error) {
	if spec == "" {
		return nil, nil
	}
	m, err := tokenize.Load(spec, tokenize.Options{CacheBytes: tokenizerCacheBytes, Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return modelTokenizer{m}, nil
}

// promptInfo is what the data path learns from a request body.
type promptInfo struct {
	// tokens is the prompt length in tokens (all prompts of the request).
	tokens int
	// exact reports whether tokens is an exact count (tokenized or token
	// ids) rather than an estimate from the text length.
	exact bool
	// hashes holds the router hashes of the full blocks of each prompt,
	// nil when the prompt could not be tokenized.
	hashes [][]kvblock.Hash
	// noHashes says why hashes is nil: "no_tokenizer" or "model_unknown".
	noHashes string
}

// promptBody is the part of a chat or completions request the sidecar reads.
// Unknown fields are ignored; the body is forwarded untouched.
type promptBody struct {
	Model     string          `json:"model"`
	Messages  []chatMessage   `json:"messages"`
	Prompt    json.RawMessage `json:"prompt"`
	CacheSalt string          `json:"cache_salt"`
	Stream    bool            `json:"stream"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// promptInspector reads prompts for the counts and the approximate block set.
type promptInspector struct {
	tok   Tokenizer // nil: no tokenizer
	model func() string
	// lora returns the LoRA adapter a request's model field names, or ""
	// (nil: never a LoRA).
	lora      func(requestModel string) string
	blockSize func() int
}

// inspect parses a chat (chat=true) or completions body and counts its
// prompt: parse, then count. ok is false when the body is not a request the
// sidecar (or its tokenizer) understands; it is forwarded anyway and the
// engine answers it.
func (p *promptInspector) inspect(body []byte, chat bool) (info promptInfo, ok bool) {
	req, ok := parsePrompt(body)
	if !ok {
		return promptInfo{}, false
	}
	return p.count(&req, body, chat)
}

// parsePrompt reads the fields of a chat or completions body the data path
// needs before it forwards the body (whether it streams) and those count
// reads; ok is false when the body is not a JSON object of that shape.
func parsePrompt(body []byte) (req promptBody, ok bool) {
	if err := json.Unmarshal(body, &req); err != nil {
		return promptBody{}, false
	}
	return req, true
}

// slow reports whether count tokenizes: the part of a prompt's inspection
// the data path runs beside the forwarding rather than before it.
func (p *promptInspector) slow() bool { return p.tok != nil }

// count counts the prompt of a body parsePrompt read as req. ok is false
// when the tokenizer cannot read it (or, with none, the prompt is malformed).
// It is safe for concurrent use.
func (p *promptInspector) count(req *promptBody, body []byte, chat bool) (info promptInfo, ok bool) {
	model := p.model()
	var lora string
	if p.lora != nil {
		lora = p.lora(req.Model)
	}
	seed := kvblock.NewSeed(model, lora, req.CacheSalt)
	bs := p.blockSize()
	if model == "" {
		// The hash seed is unknown until the engine names its model: count
		// tokens, but record no blocks.
		defer func() {
			if info.hashes != nil {
				info.hashes, info.noHashes = nil, "model_unknown"
			}
		}()
	}
	var prompts [][]uint32
	switch {
	case p.tok != nil && chat:
		ids, err := p.tok.Chat(body)
		if err != nil {
			return promptInfo{}, false
		}
		prompts = [][]uint32{ids}
	case p.tok != nil:
		var err error
		if prompts, err = p.tok.Completion(body); err != nil {
			return promptInfo{}, false
		}
	case chat:
		textLen, ok := chatTextLen(req.Messages)
		if !ok {
			return promptInfo{}, false
		}
		return promptInfo{tokens: estimateTokens(textLen), noHashes: "no_tokenizer"}, true
	default:
		texts, ids, ok := completionPrompts(req.Prompt)
		if !ok {
			return promptInfo{}, false
		}
		if len(texts) > 0 {
			n := 0
			for _, t := range texts {
				n += estimateTokens(len(t))
			}
			return promptInfo{tokens: n, noHashes: "no_tokenizer"}, true
		}
		prompts = ids // token ids need no tokenizer
	}
	info.exact = true
	for _, ids := range prompts {
		info.tokens += len(ids)
		info.hashes = append(info.hashes, kvblock.Hashes(nil, seed, ids, bs))
	}
	return info, true
}

// estimateTokens guesses a token count from a text length: about four bytes
// per token for English with BPE tokenizers.
func estimateTokens(n int) int { return (n + 3) / 4 }

// chatTextLen sums the bytes of the messages' roles and text, for an
// estimate; ok is false for a malformed message list.
func chatTextLen(raw []chatMessage) (int, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	total := 0
	for _, m := range raw {
		total += len(m.Role)
		switch {
		case len(m.Content) == 0 || string(m.Content) == "null":
		case m.Content[0] == '"':
			var content string
			if err := json.Unmarshal(m.Content, &content); err != nil {
				return 0, false
			}
			total += len(content)
		case m.Content[0] == '[':
			var parts []contentPart
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				return 0, false
			}
			for _, p := range parts {
				if p.Type == "text" {
					total += len(p.Text)
				}
			}
		default:
			return 0, false
		}
	}
	return total, true
}

// completionPrompts decodes a completions prompt: a string, a list of
// strings, a list of token ids or a list of lists of token ids.
func completionPrompts(raw json.RawMessage) (texts []string, ids [][]uint32, ok bool) {
	if len(raw) == 0 {
		return nil, nil, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil, true
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		return ss, nil, true
	}
	var one []uint32
	if json.Unmarshal(raw, &one) == nil {
		return nil, [][]uint32{one}, true
	}
	var many [][]uint32
	if json.Unmarshal(raw, &many) == nil {
		return nil, many, true
	}
	return nil, nil, false
}
