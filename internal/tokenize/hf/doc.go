// Package hf is a pure-Go implementation of the Hugging Face tokenizer.json
// pipeline that gives the same token ids as the Rust tokenizers library.
//
// Encoding follows the Rust library step by step:
//
//  1. the raw text is split on added tokens whose "normalized" flag is false
//     (leftmost-longest match, as an Aho-Corasick automaton does);
//  2. every other segment is normalized (NFC, NFKC, Prepend, Replace, ...) and
//     split again on added tokens whose "normalized" flag is true;
//  3. each remaining piece is pre-tokenized (Split with a regex that may use
//     lookahead, run by github.com/dlclark/regexp2 or, for the common model
//     families' patterns, by hand-written scanners checked against it;
//     ByteLevel; Metaspace; Digits; ...);
//  4. each word goes through the model (BPE with merge ranks, ignore_merges,
//     byte_fallback, unk fusing);
//  5. the post-processor (TemplateProcessing, ByteLevel, Sequence, ...) adds
//     special tokens when asked to.
//
// Any component of a tokenizer.json that this package does not implement is
// refused at load time with an error naming it, so a tokenizer either loads
// and matches the Rust library or does not load at all.
//
// Because step 1 cuts the text into independent segments, the ids of a segment
// depend on nothing else; Encode keeps a byte-bounded LRU cache of segment ids
// and of BPE word ids, so a repeated system prompt is not tokenized again.
//
// Config.Transformers switches the special tokens Encode adds to the ones
// Hugging Face transformers adds (and so the engines), where the two differ.
//
// A Tokenizer is safe for concurrent use by multiple goroutines.
//
// With the build tag tokenizers_rust, the package also offers RustTokenizer, a
// backend over github.com/daulet/tokenizers (which links the Rust library as a
// static archive the user downloads), used to check parity where it is present.
package hf
