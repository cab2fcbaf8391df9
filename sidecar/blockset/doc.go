// Package blockset keeps the exact set of KV blocks an engine holds, keyed by
// router hashes (internal/kvblock), with the medium (GPU, CPU, …) of each.
//
// The engine's own block hashes are not trusted across processes (vLLM seeds
// them per process), so every BlockStored is re-hashed from its token_ids
// along the parent chain: the first block of a chain starts from
// kvblock.NewSeed(model, lora, cache_salt), and each later block is
// kvblock.Next(parent, its tokens). A map engine hash → router hash per
// data-parallel rank resolves parent_block_hash and BlockRemoved.
//
// Tolerated as docs/engines.md#vllm-event-semantics-and-what-to-tolerate asks: re-announcements are idempotent;
// placeholders without tokens are mapped through a known engine hash or
// skipped; partial blocks, non-full-attention groups, blocks whose hash mixes
// multimodal inputs, and chains whose parent is unknown are skipped; each skip
// is counted. A removal of an unknown hash is a no-op. AllBlocksCleared and a
// publisher restart clear the rank; a gap that replay could not fill clears
// the rank and marks it incomplete (the set may then under-report until the
// rank is cleared by the engine or restarts).
//
// The same router block held by several ranks, media or KV-cache groups is
// reference counted; the change feed (Drain) reports a (hash, medium) when it
// gains its first holder or loses its last, for the summary builder.
package blockset
