package msgpackread

import (
	"fmt"
	"math"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// fields collects an event's fields in either encoding.
type fields struct {
	tag       string
	hashes    []uint64
	parent    *uint64
	tokens    []uint32
	blockSize int64
	loraID    int64
	medium    string
	loraName  string
	cacheSalt string
	extra     []extraKeys
	group     int64
	specKind  string
}

// extraKeys is one block's extra hash inputs, classified.
type extraKeys struct {
	strs   []string
	opaque bool // multimodal tuples, prompt-embedding digests, other non-strings
}

// positional field names of the array era, by index after the tag.
var storedPositions = [...]string{"", "block_hashes", "parent_block_hash", "token_ids", "block_size",
	"lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind"}

var removedPositions = [...]string{"", "block_hashes", "medium", "group_idx"}

// field decodes one named field into f; unknown names are skipped. For the
// array era, index 7 is vLLM's lora_name (a string) or SGLang's metadata (a
// map): the value's type decides.
func (r *Reader) field(f *fields, name string) error {
	if name == "lora_name" || name == "metadata" {
		t, err := r.Peek()
		if err != nil {
			return err
		}
		if t == Map {
			return r.metadata(f)
		}
		if name == "metadata" {
			return r.Skip()
		}
	}
	var err error
	switch name {
	case "block_hashes":
		f.hashes, err = r.hashes()
	case "parent_block_hash":
		var null bool
		if null, err = r.IsNil(); err == nil && !null {
			var h uint64
			if h, err = r.Hash(); err == nil {
				f.parent = &h
			}
		}
	case "token_ids":
		f.tokens, err = r.tokens()
	case "block_size":
		f.blockSize, err = r.Int()
	case "lora_id":
		f.loraID, err = r.Int()
	case "medium":
		f.medium, err = r.word()
	case "lora_name":
		f.loraName, err = r.String()
	case "cache_salt":
		f.cacheSalt, err = r.String()
	case "extra_keys":
		f.extra, err = r.extraKeys()
	case "group_idx":
		f.group, err = r.Int()
	case "kv_cache_spec_kind":
		f.specKind, err = r.word()
	default:
		err = r.Skip()
	}
	return err
}

func (r *Reader) metadata(f *fields) error {
	n, err := r.MapLen()
	if err != nil {
		return err
	}
	for range n {
		k, err := r.key()
		if err != nil {
			return err
		}
		if k == "cache_salt" {
			if f.cacheSalt, err = r.String(); err != nil {
				return err
			}
			continue
		}
		if err := r.Skip(); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) hashes() ([]uint64, error) {
	n, err := r.ArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	out := make([]uint64, n)
	for i := range out {
		if out[i], err = r.Hash(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *Reader) tokens() ([]uint32, error) {
	n, err := r.ArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	out := make([]uint32, n)
	for i := range out {
		v, err := r.Int()
		if err != nil {
			return nil, err
		}
		if v < 0 || v > math.MaxUint32 {
			return nil, fmt.Errorf("token id %d out of range", v)
		}
		out[i] = uint32(v)
	}
	return out, nil
}

func (r *Reader) extraKeys() ([]extraKeys, error) {
	n, err := r.ArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	out := make([]extraKeys, n)
	for i := range out {
		t, err := r.Peek()
		if err != nil {
			return nil, err
		}
		if t != Array {
			// nil (no extra keys) or an unknown shape, which is opaque.
			out[i].opaque = t != Nil
			if err := r.Skip(); err != nil {
				return nil, err
			}
			continue
		}
		m, err := r.ArrayLen()
		if err != nil {
			return nil, err
		}
		for range m {
			if t, err = r.Peek(); err != nil {
				return nil, err
			}
			if t == Str {
				s, err := r.String()
				if err != nil {
					return nil, err
				}
				out[i].strs = append(out[i].strs, s)
				continue
			}
			out[i].opaque = true
			if err := r.Skip(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (f *fields) event() engine.Event {
	switch f.tag {
	case tagStored, tagStoredWithMeta:
		ev := engine.BlockStored{
			EngineHashes: f.hashes,
			Parent:       f.parent,
			Tokens:       f.tokens,
			Medium:       engine.NormalizeMedium(f.medium),
			LoRA:         f.loraName,
			LoRAID:       f.loraID,
			CacheSalt:    f.cacheSalt,
			GroupIdx:     clampInt(f.group),
			SpecKind:     f.specKind,
		}
		if f.blockSize > 0 && f.blockSize <= math.MaxInt32 {
			ev.BlockSize = int(f.blockSize)
		}
		f.applyExtraKeys(&ev)
		return ev
	case tagRemoved:
		return engine.BlockRemoved{
			EngineHashes: f.hashes,
			Medium:       engine.NormalizeMedium(f.medium),
			GroupIdx:     clampInt(f.group),
		}
	case tagCleared:
		return engine.AllBlocksCleared{}
	}
	return nil
}

// applyExtraKeys reads vLLM's per-block extra hash inputs (docs/engines.md#vllm-extra-hash-keys:
// lora_name, multimodal items, cache_salt on the block at token 0, prompt
// embeddings). Strings other than the LoRA name on the first block are the
// cache salt (the last one); anything else makes the blocks opaque.
func (f *fields) applyExtraKeys(ev *engine.BlockStored) {
	for i, e := range f.extra {
		if e.opaque {
			ev.Opaque = true
		}
		strs := e.strs
		if len(strs) > 0 && f.loraName != "" && strs[0] == f.loraName {
			strs = strs[1:]
		}
		if len(strs) == 0 {
			continue
		}
		if i == 0 && f.parent == nil {
			if ev.CacheSalt == "" {
				ev.CacheSalt = strs[len(strs)-1]
			}
			if len(strs) > 1 {
				ev.Opaque = true // older multimodal hashes were bare strings
			}
			continue
		}
		ev.Opaque = true
	}
}

func clampInt(v int64) int {
	if v < 0 || v > math.MaxInt32 {
		return 0
	}
	return int(v)
}
