// Package msgpackread is the bounded msgpack reader shared by the engine adapters.
//
// It wraps vmihailenco/msgpack/v5's low-level Decoder over an in-memory
// payload and checks every length header against the bytes left before
// anything is allocated, so a hostile header claiming 2^32 elements fails at
// once. Skipping is iterative (no recursion), so deep nesting cannot exhaust
// the stack. KV-event hashes of any integer width or as bytes are normalised
// to uint64 (docs/engines.md#vllm-block-hashes-on-the-wire).
package msgpackread
