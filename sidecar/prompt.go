package sidecar

import (
	"encoding/json"
	"strings"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

// ChatMessage is one chat message as the tokenizer sees it: text parts
// joined, other parts dropped.
type ChatMessage struct {
	Role, Content string
}

// Tokenizer turns a request's prompt into the token ids the engine will run.
// It is the seam for real tokenizers (internal/tokenize); builtin:sim is the
// only one wired today. Implementations must be safe for concurrent use.
type Tokenizer interface {
	// EncodeChat renders messages with the chat template and tokenizes them.
	EncodeChat(msgs []ChatMessage, addGenerationPrompt, continueFinal, addSpecial bool) []uint32
	// EncodeText tokenizes a completion prompt.
	EncodeText(text string, addSpecial bool) []uint32
}

// simTokenizer is the builtin:sim tokenizer.
type simTokenizer struct{}

func (simTokenizer) EncodeChat(msgs []ChatMessage, addGen, cont, addSpecial bool) []uint32 {
	sm := make([]simtok.Message, len(msgs))
	for i, m := range msgs {
		sm[i] = simtok.Message{Role: m.Role, Content: m.Content}
	}
	return simtok.Encode(simtok.RenderChat(sm, addGen, cont), addSpecial)
}

func (simTokenizer) EncodeText(text string, addSpecial bool) []uint32 {
	return simtok.Encode(text, addSpecial)
}

var _ Tokenizer = simTokenizer{}

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
	Model                string          `json:"model"`
	Messages             []chatMessage   `json:"messages"`
	Prompt               json.RawMessage `json:"prompt"`
	CacheSalt            string          `json:"cache_salt"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ContinueFinalMessage bool            `json:"continue_final_message"`
	AddSpecialTokens     *bool           `json:"add_special_tokens"`
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

// inspect parses a chat (chat=true) or completions body. ok is false when the
// body is not a request the sidecar understands (it is forwarded anyway).
func (p *promptInspector) inspect(body []byte, chat bool) (info promptInfo, ok bool) {
	var req promptBody
	if err := json.Unmarshal(body, &req); err != nil {
		return promptInfo{}, false
	}
	model := p.model()
	var lora string
	if p.lora != nil {
		lora = p.lora(req.Model)
	}
	seed := kvblock.NewSeed(model, lora, req.CacheSalt)
	bs := p.blockSize()
	tok := p.tok
	if model == "" {
		// The hash seed is unknown until the engine names its model: count
		// tokens, but record no blocks.
		defer func() {
			if info.hashes != nil {
				info.hashes, info.noHashes = nil, "model_unknown"
			}
		}()
	}
	if chat {
		msgs, textLen, ok := chatMessages(req.Messages)
		if !ok {
			return promptInfo{}, false
		}
		if tok == nil {
			return promptInfo{tokens: estimateTokens(textLen), noHashes: "no_tokenizer"}, true
		}
		addGen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
		addSpecial := req.AddSpecialTokens != nil && *req.AddSpecialTokens
		ids := tok.EncodeChat(msgs, addGen, req.ContinueFinalMessage, addSpecial)
		return promptInfo{tokens: len(ids), exact: true, hashes: [][]kvblock.Hash{kvblock.Hashes(nil, seed, ids, bs)}}, true
	}
	addSpecial := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	texts, idLists, ok := completionPrompts(req.Prompt)
	if !ok {
		return promptInfo{}, false
	}
	info.exact = true
	for _, ids := range idLists {
		info.tokens += len(ids)
		info.hashes = append(info.hashes, kvblock.Hashes(nil, seed, ids, bs))
	}
	for _, text := range texts {
		if tok == nil {
			info.tokens += estimateTokens(len(text))
			info.exact, info.hashes, info.noHashes = false, nil, "no_tokenizer"
			continue
		}
		ids := tok.EncodeText(text, addSpecial)
		info.tokens += len(ids)
		info.hashes = append(info.hashes, kvblock.Hashes(nil, seed, ids, bs))
	}
	return info, true
}

// estimateTokens guesses a token count from a text length: about four bytes
// per token for English with BPE tokenizers.
func estimateTokens(n int) int { return (n + 3) / 4 }

func chatMessages(raw []chatMessage) ([]ChatMessage, int, bool) {
	if len(raw) == 0 {
		return nil, 0, false
	}
	msgs := make([]ChatMessage, 0, len(raw))
	total := 0
	for _, m := range raw {
		var content string
		switch {
		case len(m.Content) == 0 || string(m.Content) == "null":
		case m.Content[0] == '"':
			if err := json.Unmarshal(m.Content, &content); err != nil {
				return nil, 0, false
			}
		case m.Content[0] == '[':
			var parts []contentPart
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				return nil, 0, false
			}
			var b strings.Builder
			for _, p := range parts {
				if p.Type == "text" {
					b.WriteString(p.Text)
				}
			}
			content = b.String()
		default:
			return nil, 0, false
		}
		total += len(m.Role) + len(content)
		msgs = append(msgs, ChatMessage{Role: m.Role, Content: content})
	}
	return msgs, total, true
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
