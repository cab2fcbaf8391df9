//go:build tokenizers_rust

package hf

import (
	"fmt"
	"os"
	"path/filepath"

	rust "github.com/daulet/tokenizers"
)

// RustTokenizer is the optional backend over github.com/daulet/tokenizers,
// which links Hugging Face's Rust library (libtokenizers.a, built from Rust
// or downloaded from daulet/tokenizers' releases). It is built only with the
// tokenizers_rust build tag and has the same Encode and Decode contract as
// Tokenizer; it is used to check parity where the library is present.
//
// A RustTokenizer is safe for concurrent use; Close releases it.
type RustTokenizer struct {
	tk *rust.Tokenizer
}

// LoadRust loads dir/tokenizer.json with the Rust library.
func LoadRust(dir string) (*RustTokenizer, error) {
	return LoadRustFile(filepath.Join(dir, "tokenizer.json"))
}

// LoadRustFile loads a tokenizer.json file with the Rust library.
func LoadRustFile(tokenizerJSON string) (*RustTokenizer, error) {
	data, err := os.ReadFile(tokenizerJSON)
	if err != nil {
		return nil, fmt.Errorf("load rust tokenizer: %w", err)
	}
	tk, err := rust.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("load rust tokenizer %s: %w", tokenizerJSON, err)
	}
	return &RustTokenizer{tk: tk}, nil
}

// Encode returns the ids of text, as encode(text, add_special_tokens).ids.
func (r *RustTokenizer) Encode(text string, addSpecialTokens bool) ([]uint32, error) {
	if !validUTF8(text) {
		return nil, fmt.Errorf("encode: %w", ErrInvalidUTF8)
	}
	ids, _ := r.tk.Encode(text, addSpecialTokens)
	return ids, nil
}

// Decode returns the text of ids, as decode(ids, skip_special_tokens).
func (r *RustTokenizer) Decode(ids []uint32, skipSpecialTokens bool) (string, error) {
	return r.tk.Decode(ids, skipSpecialTokens), nil
}

// VocabSize returns the Rust library's vocabulary size (added tokens
// included).
func (r *RustTokenizer) VocabSize() int { return int(r.tk.VocabSize()) }

// Close releases the native tokenizer.
func (r *RustTokenizer) Close() error { return r.tk.Close() }
