package enginesim

import (
	"fmt"

	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

// promptTokenizer is what the front end needs from a tokenizer: the chat
// template, encoding, decoding and the token set it generates from. It is the
// seam where a model directory's tokenizer (internal/tokenize, once it lands)
// replaces builtin:sim.
type promptTokenizer interface {
	// EncodeChat renders msgs with the chat template and tokenizes the
	// result; addSpecial adds special tokens on top of the template's.
	EncodeChat(msgs []openai.Message, addGenerationPrompt, continueFinal, addSpecial bool) ([]uint32, error)
	// Encode tokenizes text; addSpecial adds the BOS token.
	Encode(text string, addSpecial bool) []uint32
	// Decode returns the text of ids, skipping special tokens when asked.
	Decode(ids []uint32, skipSpecial bool) (string, error)
	// TokenText returns one token's text ("" for a special token when
	// skipSpecial) and reports whether id is in the vocabulary.
	TokenText(id uint32, skipSpecial bool) (string, bool)
	// EOS is the end-of-sequence token.
	EOS() uint32
	// Vocabulary is the set of ordinary tokens generated text is drawn from.
	Vocabulary() []uint32
}

// newTokenizer returns the tokenizer named by --tokenizer.
func newTokenizer(name string) (promptTokenizer, error) {
	if name == TokenizerBuiltinSim {
		return simTokenizer{}, nil
	}
	// Seam: a model directory (tokenizer.json, tokenizer_config.json with the
	// chat template) goes here once internal/tokenize provides a loader.
	return nil, fmt.Errorf("tokenizer %q: only %q is supported", name, TokenizerBuiltinSim)
}

// simTokenizer adapts internal/tokenize/simtok.
type simTokenizer struct{}

func (simTokenizer) EncodeChat(msgs []openai.Message, addGenerationPrompt, continueFinal, addSpecial bool) ([]uint32, error) {
	sm := make([]simtok.Message, len(msgs))
	for i, m := range msgs {
		sm[i] = simtok.Message{Role: m.Role, Content: m.Content}
	}
	return simtok.Encode(simtok.RenderChat(sm, addGenerationPrompt, continueFinal), addSpecial), nil
}

func (simTokenizer) Encode(text string, addSpecial bool) []uint32 {
	return simtok.Encode(text, addSpecial)
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
