package enginesim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/tokenize"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

// promptTokenizer is what the front end needs from a tokenizer: the chat
// template, encoding, decoding and the tokens it generates from. builtin:sim
// is served by simTokenizer; a model directory by modelTokenizer, which
// renders chat requests exactly as the balancer does (internal/tokenize).
type promptTokenizer interface {
	// ChatPrompt renders and tokenizes a chat request (body is the request
	// as sent, req its parsed form).
	ChatPrompt(body []byte, msgs []openai.Message, addGenerationPrompt, continueFinal, addSpecial bool) ([]uint32, error)
	// Encode tokenizes text; addSpecial adds the tokenizer's special tokens (BOS).
	Encode(text string, addSpecial bool) ([]uint32, error)
	// Decode returns the text of ids, skipping special tokens when asked.
	Decode(ids []uint32, skipSpecial bool) (string, error)
	// TokenText returns one token's text ("" for a special token when
	// skipSpecial) and reports whether id is in the vocabulary.
	TokenText(id uint32, skipSpecial bool) (string, bool)
	// EOS is the end-of-sequence token.
	EOS() uint32
	// Vocabulary is the set of ordinary tokens generated text is drawn from;
	// any sequence of them decodes and re-encodes to itself.
	Vocabulary() []uint32
}

// newTokenizer returns the tokenizer named by --tokenizer: "builtin:sim" or
// a model directory (tokenizer.json, tokenizer_config.json and its chat
// template, or chatTemplate when set).
func newTokenizer(spec, chatTemplate string) (promptTokenizer, error) {
	if spec == TokenizerBuiltinSim && chatTemplate == "" {
		return simTokenizer{}, nil
	}
	return newModelTokenizer(spec, chatTemplate)
}

// simTokenizer adapts internal/tokenize/simtok (the fast path for
// builtin:sim; a test checks it against internal/tokenize).
type simTokenizer struct{}

func (simTokenizer) ChatPrompt(_ []byte, msgs []openai.Message, addGenerationPrompt, continueFinal, addSpecial bool) ([]uint32, error) {
	sm := make([]simtok.Message, len(msgs))
	for i, m := range msgs {
		sm[i] = simtok.Message{Role: m.Role, Content: m.Content}
	}
	return simtok.Encode(simtok.RenderChat(sm, addGenerationPrompt, continueFinal), addSpecial), nil
}

func (simTokenizer) Encode(text string, addSpecial bool) ([]uint32, error) {
	return simtok.Encode(text, addSpecial), nil
}

func (simTokenizer) Decode(ids []uint32, skipSpecial bool) (string, error) {
	return simtok.Decode(ids, skipSpecial)
}

func (simTokenizer) TokenText(id uint32, skipSpecial bool) (string, bool) {
	s, special, err := simtok.Token(id)
	if err != nil {
		return "", false
	}
	if special && skipSpecial {
		return "", true
	}
	return s, true
}

func (simTokenizer) EOS() uint32 { return simtok.EOSID }

func (simTokenizer) Vocabulary() []uint32 { return simtok.Vocabulary }

// modelTokenizer serves a model directory through internal/tokenize.
type modelTokenizer struct {
	m     *tokenize.Model
	eos   uint32
	vocab []uint32
}

// generationWords are candidate generated words; those the model's
// tokenizer encodes (with a leading space) as one token that decodes back
// to itself form the generation vocabulary.
var generationWords = strings.Fields("the a of to and in is it that for on with as was at by be this are or from " +
	"an not but all can one has had have they you we he she his her its our out up so if no new more time")

func newModelTokenizer(spec, chatTemplate string) (*modelTokenizer, error) {
	m, err := tokenize.Load(spec, tokenize.Options{ChatTemplate: chatTemplate})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t := &modelTokenizer{m: m}
	if spec == TokenizerBuiltinSim {
		t.eos, t.vocab = simtok.EOSID, simtok.Vocabulary
		return t, nil
	}
	eosText, err := readEOSToken(filepath.Join(spec, "tokenizer_config.json"))
	if err != nil {
		return nil, fmt.Errorf("tokenizer %q: %w", spec, err)
	}
	ids, err := m.Encode(eosText, false)
	if err != nil || len(ids) != 1 {
		return nil, fmt.Errorf("tokenizer %q: eos_token %q is not one token (%v, %v)", spec, eosText, ids, err)
	}
	t.eos = ids[0]
	for _, w := range generationWords {
		ids, err := m.Encode(" "+w, false)
		if err != nil || len(ids) != 1 {
			continue
		}
		if txt, err := m.Decode(ids, true); err == nil && txt == " "+w {
			t.vocab = append(t.vocab, ids[0])
		}
	}
	if len(t.vocab) < 8 {
		return nil, fmt.Errorf("tokenizer %q: only %d of %d common words are single tokens; cannot generate text", spec, len(t.vocab), len(generationWords))
	}
	return t, nil
}

// readEOSToken returns tokenizer_config.json's eos_token (a string or an
// AddedToken object).
func readEOSToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var cfg struct {
		EOS json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var s string
	if json.Unmarshal(cfg.EOS, &s) == nil && s != "" {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(cfg.EOS, &obj) == nil && obj.Content != "" {
		return obj.Content, nil
	}
	return "", errors.New(path + ": no eos_token")
}

func (t *modelTokenizer) ChatPrompt(body []byte, _ []openai.Message, _, _, _ bool) ([]uint32, error) {
	p, err := t.m.Chat(body)
	if err != nil {
		return nil, err
	}
	return p.TokenIDs, nil
}

func (t *modelTokenizer) Encode(text string, addSpecial bool) ([]uint32, error) {
	return t.m.Encode(text, addSpecial)
}

func (t *modelTokenizer) Decode(ids []uint32, skipSpecial bool) (string, error) {
	return t.m.Decode(ids, skipSpecial)
}

func (t *modelTokenizer) TokenText(id uint32, skipSpecial bool) (string, bool) {
	s, err := t.m.Decode([]uint32{id}, skipSpecial)
	return s, err == nil
}

func (t *modelTokenizer) EOS() uint32 { return t.eos }

func (t *modelTokenizer) Vocabulary() []uint32 { return t.vocab }
