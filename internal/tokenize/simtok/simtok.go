// Package simtok is the builtin:sim tokenizer: fast, deterministic and
// self-consistent, for the simulator and for tests that need no model files.
//
// Text is cut left to right into chunks of at most three bytes of whole runes
// (a lone four-byte rune is a chunk of its own); a chunk ends right after a
// whitespace byte and right before a special token. A boundary therefore
// depends only on the text to its left (and on whether a special token starts
// there), so texts that share a prefix share its tokens. Generated text is
// drawn from Vocabulary, whose tokens are exactly the chunks the tokenizer
// produces, so generated text retokenizes to the same ids.
package simtok

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Special token ids.
const (
	PadID      uint32 = 0
	BOSID      uint32 = 1
	StartID    uint32 = 2 // starts a chat message header
	EndID      uint32 = 3 // ends a chat message; the end-of-sequence token
	EOSID             = EndID
	numSpecial        = 16
)

// Special token texts, indexed by id.
var specials = [...]string{
	PadID:   "<|pad|>",
	BOSID:   "<|begin_of_text|>",
	StartID: "<|start|>",
	EndID:   "<|end|>",
}

const (
	base1 = numSpecial    // 1-byte chunks
	base2 = base1 + 1<<8  // 2-byte chunks
	base3 = base2 + 1<<16 // 3-byte chunks
	base4 = base3 + 1<<24 // 4-byte runes (lead byte 0xF0..0xF4)
	limit = base4 + 5<<24 // first id past the vocabulary
)

// VocabSize is one past the largest id the tokenizer can produce.
const VocabSize = limit

// ChatTemplate describes the builtin:sim chat format (informational).
const ChatTemplate = "<|start|>{role}\n{content}<|end|>\n ... <|start|>assistant\n"

// Encode tokenizes text. With addSpecial it starts with the BOS token, as a
// completions prompt does.
func Encode(text string, addSpecial bool) []uint32 {
	return AppendEncode(make([]uint32, 0, len(text)/3+2), text, addSpecial)
}

// AppendEncode appends the ids of text to dst.
func AppendEncode(dst []uint32, text string, addSpecial bool) []uint32 {
	if addSpecial {
		dst = append(dst, BOSID)
	}
	i := 0
	for i < len(text) {
		if text[i] == '<' {
			if id, n, ok := special(text[i:]); ok {
				dst = append(dst, id)
				i += n
				continue
			}
		}
		// One chunk: whole runes, at most 3 bytes (or one 4-byte rune).
		start := i
		for i < len(text) {
			_, size := utf8.DecodeRuneInString(text[i:])
			if i > start && (i-start+size > 3) {
				break
			}
			i += size
			if isSpace(text[i-1]) || size == 4 {
				break
			}
			if i < len(text) && text[i] == '<' {
				if _, _, ok := special(text[i:]); ok {
					break
				}
			}
		}
		dst = append(dst, chunkID(text[start:i]))
	}
	return dst
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

func special(s string) (uint32, int, bool) {
	if len(s) < 3 || s[1] != '|' {
		return 0, 0, false
	}
	for id, sp := range specials {
		if sp != "" && strings.HasPrefix(s, sp) {
			return uint32(id), len(sp), true
		}
	}
	return 0, 0, false
}

func chunkID(c string) uint32 {
	switch len(c) {
	case 1:
		return base1 + uint32(c[0])
	case 2:
		return base2 + (uint32(c[0])<<8 | uint32(c[1]))
	case 3:
		return base3 + (uint32(c[0])<<16 | uint32(c[1])<<8 | uint32(c[2]))
	default: // a 4-byte rune; an invalid lead byte cannot reach here
		return base4 + (uint32(c[0]-0xF0)<<24 | uint32(c[1])<<16 | uint32(c[2])<<8 | uint32(c[3]))
	}
}

// Token returns the bytes of id, and whether id is a special token. An id
// outside the vocabulary is an error.
func Token(id uint32) (string, bool, error) {
	switch {
	case id < numSpecial:
		if int(id) < len(specials) && specials[id] != "" {
			return specials[id], true, nil
		}
		return "", true, fmt.Errorf("token id %d is not in the vocabulary", id)
	case id < base2:
		return string([]byte{byte(id - base1)}), false, nil
	case id < base3:
		v := id - base2
		return string([]byte{byte(v >> 8), byte(v)}), false, nil
	case id < base4:
		v := id - base3
		return string([]byte{byte(v >> 16), byte(v >> 8), byte(v)}), false, nil
	case id < limit:
		v := id - base4
		return string([]byte{byte(v>>24) + 0xF0, byte(v >> 16), byte(v >> 8), byte(v)}), false, nil
	}
	return "", false, fmt.Errorf("token id %d is not in the vocabulary (size %d)", id, VocabSize)
}

// Decode returns the text of ids. Special tokens are skipped when skipSpecial
// is set, as vLLM's default skip_special_tokens does.
func Decode(ids []uint32, skipSpecial bool) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		s, sp, err := Token(id)
		if err != nil {
			return "", err
		}
		if sp && skipSpecial {
			continue
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// Vocabulary is the set of tokens the simulator generates from: short words
// followed by a space, each exactly one chunk, so any sequence of them
// retokenizes to the same ids.
var Vocabulary = func() []uint32 {
	words := strings.Fields("a an as at be by do go he if in is it me my no of on or so to up us we " +
		"ok hi oh am ah ax ex id ma pa re yo ye lo")
	ids := make([]uint32, len(words))
	for i, w := range words {
		ids[i] = Encode(w+" ", false)[0]
	}
	return ids
}()

// Message is one chat message for RenderChat.
type Message struct {
	Role, Content string
}

// RenderChat renders messages in the builtin:sim chat format. With
// addGenerationPrompt it ends with an open assistant header; with
// continueFinal the last message is left open (no end token).
func RenderChat(msgs []Message, addGenerationPrompt, continueFinal bool) string {
	var b strings.Builder
	for i, m := range msgs {
		b.WriteString(specials[StartID])
		b.WriteString(m.Role)
		b.WriteByte('\n')
		b.WriteString(m.Content)
		if continueFinal && i == len(msgs)-1 {
			return b.String()
		}
		b.WriteString(specials[EndID])
		b.WriteByte('\n')
	}
	if addGenerationPrompt {
		b.WriteString(specials[StartID])
		b.WriteString("assistant\n")
	}
	return b.String()
}
