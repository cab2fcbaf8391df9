package kvevents

import (
	"fmt"
	"time"
)

// Format selects the payload encoding of the vLLM release being imitated.
type Format string

const (
	// FormatMap is vLLM v0.24+: events are msgpack maps tagged with "type",
	// None-valued defaulted fields omitted (msgspec omit_defaults).
	FormatMap Format = "map"
	// FormatArray is the array era of vLLM v0.22–v0.23: events are arrays
	// [tag, 11 BlockStored fields] with every field present.
	FormatArray Format = "array"
	// FormatArrayV010 is the array era of vLLM v0.10.2–v0.13 (and SGLang's
	// shape): BlockStored is [tag, block_hashes, parent_block_hash, token_ids,
	// block_size, lora_id, medium], BlockRemoved [tag, block_hashes, medium].
	FormatArrayV010 Format = "array-v0.10"
)

// ParseFormat returns the Format named s ("" means FormatMap).
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case "":
		return FormatMap, nil
	case FormatMap, FormatArray, FormatArrayV010:
		return f, nil
	default:
		return "", fmt.Errorf("unknown kv event format %q (want %q, %q or %q)", s, FormatMap, FormatArray, FormatArrayV010)
	}
}

// EventType is the kind of a KV-cache event.
type EventType uint8

const (
	// BlockStored reports blocks that became full and cached.
	BlockStored EventType = iota + 1
	// BlockRemoved reports evicted blocks.
	BlockRemoved
	// AllBlocksCleared reports a prefix-cache reset.
	AllBlocksCleared
)

// String returns the event's msgspec tag ("BlockStored", ...), which is also
// the value of the metrics' type label.
func (t EventType) String() string {
	switch t {
	case BlockStored:
		return "BlockStored"
	case BlockRemoved:
		return "BlockRemoved"
	case AllBlocksCleared:
		return "AllBlocksCleared"
	default:
		return fmt.Sprintf("EventType(%d)", uint8(t))
	}
}

// Event is one KV-cache event of the GPU pool, as the simulator produces it.
type Event struct {
	// Type selects which of the fields below are encoded.
	Type EventType
	// BlockHashes are engine block hashes (BlockStored: the new blocks in
	// order; BlockRemoved: the evicted block).
	BlockHashes []uint64
	// ParentBlockHash is the hash of the block before the first one, or nil
	// when the first block starts at token 0 (BlockStored only).
	ParentBlockHash *uint64
	// TokenIDs are exactly the new blocks' tokens (BlockStored only).
	TokenIDs []uint32
	// BlockSize is the block size in tokens (BlockStored only).
	BlockSize int
	// LoRAName is the adapter's name, or "" for the base model (BlockStored
	// only; published as lora_name and in extra_keys).
	LoRAName string
}

// Values of the fields the simulator never varies.
const (
	mediumGPU         = "GPU"
	specFullAttention = "full_attention"
)

// AppendBatch appends the msgpack payload of one KVEventBatch,
// [ts, events, data_parallel_rank], in format f. ts is written as float
// seconds since the epoch, like Python's time.time().
func AppendBatch(dst []byte, f Format, ts time.Time, events []Event, rank int) []byte {
	dst = appendArrayHeader(dst, 3)
	dst = appendFloat64(dst, unixSeconds(ts))
	dst = appendArrayHeader(dst, len(events))
	for i := range events {
		dst = appendEvent(dst, f, &events[i])
	}
	return appendUint(dst, uint64(rank))
}

// unixSeconds converts t the way Python's time.time() is represented:
// integer seconds plus the fraction, so exact binary fractions stay exact.
func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

func appendEvent(b []byte, f Format, e *Event) []byte {
	tag := e.Type.String()
	switch f {
	case FormatArray, FormatArrayV010:
		return appendEventArray(b, f == FormatArrayV010, tag, e)
	default:
		return appendEventMap(b, tag, e)
	}
}

// appendEventMap writes a tagged msgspec map (omit_defaults): fields with a
// default of None are left out when None, the others always written.
func appendEventMap(b []byte, tag string, e *Event) []byte {
	switch e.Type {
	case BlockStored:
		b = appendMapHeader(b, 11)
		b = appendStr(appendStr(b, "type"), tag)
		b = appendHashes(appendStr(b, "block_hashes"), e.BlockHashes)
		b = appendParent(appendStr(b, "parent_block_hash"), e.ParentBlockHash)
		b = appendTokens(appendStr(b, "token_ids"), e.TokenIDs)
		b = appendUint(appendStr(b, "block_size"), uint64(e.BlockSize))
		b = appendNil(appendStr(b, "lora_id"))
		b = appendStr(appendStr(b, "medium"), mediumGPU)
		b = appendLoRAName(appendStr(b, "lora_name"), e.LoRAName)
		b = appendExtraKeys(appendStr(b, "extra_keys"), len(e.BlockHashes), e.LoRAName)
		b = appendUint(appendStr(b, "group_idx"), 0)
		return appendStr(appendStr(b, "kv_cache_spec_kind"), specFullAttention)
	case BlockRemoved:
		b = appendMapHeader(b, 4)
		b = appendStr(appendStr(b, "type"), tag)
		b = appendHashes(appendStr(b, "block_hashes"), e.BlockHashes)
		b = appendStr(appendStr(b, "medium"), mediumGPU)
		return appendUint(appendStr(b, "group_idx"), 0)
	default:
		b = appendMapHeader(b, 1)
		return appendStr(appendStr(b, "type"), tag)
	}
}

// appendEventArray writes an array_like msgspec struct: the tag, then every
// field in declaration order (omit_defaults has no effect on arrays).
func appendEventArray(b []byte, v010 bool, tag string, e *Event) []byte {
	switch e.Type {
	case BlockStored:
		if v010 {
			b = appendArrayHeader(b, 7)
		} else {
			b = appendArrayHeader(b, 12)
		}
		b = appendStr(b, tag)
		b = appendHashes(b, e.BlockHashes)
		b = appendParent(b, e.ParentBlockHash)
		b = appendTokens(b, e.TokenIDs)
		b = appendUint(b, uint64(e.BlockSize))
		b = appendNil(b) // lora_id
		b = appendStr(b, mediumGPU)
		if v010 {
			return b
		}
		b = appendLoRAName(b, e.LoRAName)
		b = appendExtraKeys(b, len(e.BlockHashes), e.LoRAName)
		b = appendUint(b, 0) // group_idx
		b = appendStr(b, specFullAttention)
		return appendNil(b) // kv_cache_spec_sliding_window
	case BlockRemoved:
		if v010 {
			b = appendArrayHeader(b, 3)
		} else {
			b = appendArrayHeader(b, 4)
		}
		b = appendStr(b, tag)
		b = appendHashes(b, e.BlockHashes)
		b = appendStr(b, mediumGPU)
		if v010 {
			return b
		}
		return appendUint(b, 0) // group_idx
	default:
		b = appendArrayHeader(b, 1)
		return appendStr(b, tag)
	}
}

func appendHashes(b []byte, hs []uint64) []byte {
	b = appendArrayHeader(b, len(hs))
	for _, h := range hs {
		b = appendUint(b, h)
	}
	return b
}

func appendTokens(b []byte, ts []uint32) []byte {
	b = appendArrayHeader(b, len(ts))
	for _, t := range ts {
		b = appendUint(b, uint64(t))
	}
	return b
}

func appendParent(b []byte, p *uint64) []byte {
	if p == nil {
		return appendNil(b)
	}
	return appendUint(b, *p)
}

func appendLoRAName(b []byte, name string) []byte {
	if name == "" {
		return appendNil(b)
	}
	return appendStr(b, name)
}

// appendExtraKeys writes one entry per block: nil, or the 1-tuple
// (lora_name,) that vLLM feeds into the block hash for a LoRA request.
func appendExtraKeys(b []byte, blocks int, lora string) []byte {
	b = appendArrayHeader(b, blocks)
	for range blocks {
		if lora == "" {
			b = appendNil(b)
			continue
		}
		b = appendStr(appendArrayHeader(b, 1), lora)
	}
	return b
}
