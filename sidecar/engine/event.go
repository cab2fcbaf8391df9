package engine

import (
	"strings"
	"time"
)

// Kind names an engine implementation.
type Kind string

// Engine kinds with an adapter.
const (
	KindVLLM     Kind = "vllm"
	KindSGLang   Kind = "sglang"
	KindLlamaCpp Kind = "llamacpp"
)

// Canonical media. Decoders upper-case the engine's medium and map engine
// spellings onto these where they mean the same tier (SGLang's CPU_PINNED is
// CPU); any other medium is kept upper-cased.
const (
	MediumGPU      = "GPU"
	MediumCPU      = "CPU"
	MediumDisk     = "DISK"
	MediumStorage  = "STORAGE"
	MediumExternal = "EXTERNAL"
)

// NormalizeMedium returns the canonical spelling of an engine medium. An empty
// medium (vLLM before v0.10.2 did not send one) means the GPU pool.
func NormalizeMedium(m string) string {
	if m == "" {
		return MediumGPU
	}
	u := strings.ToUpper(m)
	switch u {
	case "CPU_PINNED":
		return MediumCPU
	}
	return u
}

// Event is one KV-cache event: a BlockStored, BlockRemoved or AllBlocksCleared
// value (never a pointer).
type Event interface {
	isEvent()
}

// BlockStored reports blocks that became full and cached, for one request and
// one KV-cache group, in chain order.
type BlockStored struct {
	// EngineHashes are the engine's block hashes normalised to uint64.
	EngineHashes []uint64
	// Parent is the engine hash of the block before the first one, or nil when
	// the first block starts at token 0.
	Parent *uint64
	// Tokens are exactly the tokens of the blocks (len = blocks × BlockSize),
	// or empty for a placeholder / hash-only announcement.
	Tokens []uint32
	// BlockSize is the block size in tokens (a partial-block entry carries its
	// partial span; a placeholder carries 0).
	BlockSize int
	// Medium is the canonical medium (see NormalizeMedium).
	Medium string
	// LoRA is the adapter name, or "" for the base model.
	LoRA string
	// LoRAID is the deprecated numeric adapter id (vLLM before v0.14 sent only
	// this); 0 when absent.
	LoRAID int64
	// CacheSalt is the request's cache_salt when the engine reports it
	// (SGLang metadata, vLLM extra_keys of the first block), else "".
	CacheSalt string
	// GroupIdx is the KV-cache group (0 for plain models).
	GroupIdx int
	// SpecKind is the group's attention kind ("full_attention", "sliding_window",
	// "mamba", …) or "" when the engine does not say.
	SpecKind string
	// Opaque reports that the engine mixed inputs other than tokens, LoRA and
	// cache salt into the blocks' hashes (multimodal items, prompt
	// embeddings), so a token-only re-hash would conflate them with plain text.
	Opaque bool
}

// BlockRemoved reports blocks evicted from one medium.
type BlockRemoved struct {
	// EngineHashes are the engine's block hashes normalised to uint64.
	EngineHashes []uint64
	// Medium is the canonical medium (see NormalizeMedium).
	Medium string
	// GroupIdx is the KV-cache group (0 when the engine does not say).
	GroupIdx int
}

// AllBlocksCleared reports that the engine dropped its whole prefix cache.
type AllBlocksCleared struct{}

func (BlockStored) isEvent()      {}
func (BlockRemoved) isEvent()     {}
func (AllBlocksCleared) isEvent() {}

// Batch is one published message: the events of one scheduler step of one
// data-parallel rank.
type Batch struct {
	// Seq is the publisher's sequence number (from the ZMQ frame, not the
	// payload); decoders leave it 0.
	Seq uint64
	// TS is when the engine built the batch.
	TS time.Time
	// Rank is the data-parallel rank: the payload's value when present, else
	// -1; the subscriber overwrites it with the rank of the socket.
	Rank int
	// Events in engine order.
	Events []Event
}
