package msgpackread

import (
	"fmt"
	"math"
	"time"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// Event tags.
const (
	tagStored         = "BlockStored"
	tagStoredWithMeta = "BlockStoredWithMetadata"
	tagRemoved        = "BlockRemoved"
	tagCleared        = "AllBlocksCleared"
)

// DecodeBatch decodes a KV-event batch in any form vLLM (v0.9.0 to main) or
// SGLang has published: the outer batch an array [ts, events] or [ts, events,
// rank] (extra trailing elements ignored) or, defensively, a map; each event
// an array led by its tag (fields by position, missing trailing fields taken
// as nil, extra ones ignored) or a map with a "type" key (fields by name,
// unknown keys ignored). Events with an unknown tag are skipped. The batch's
// Seq is left 0.
func DecodeBatch(payload []byte) (engine.Batch, error) {
	return NewReader(payload).Batch()
}

// Batch decodes a batch from the reader (see DecodeBatch).
func (r *Reader) Batch() (engine.Batch, error) {
	b := engine.Batch{Rank: -1}
	t, err := r.Peek()
	if err != nil {
		return b, err
	}
	switch t {
	case Array:
		n, err := r.ArrayLen()
		if err != nil {
			return b, err
		}
		if n < 2 {
			return b, fmt.Errorf("batch: array of %d, want 2 or 3", n)
		}
		for i := range n {
			switch i {
			case 0:
				err = r.ts(&b)
			case 1:
				b.Events, err = r.events()
			case 2:
				err = r.rank(&b)
			default:
				err = r.Skip()
			}
			if err != nil {
				return b, fmt.Errorf("batch[%d]: %w", i, err)
			}
		}
	case Map:
		n, err := r.MapLen()
		if err != nil {
			return b, err
		}
		var seenEvents bool
		for range n {
			k, err := r.key()
			if err != nil {
				return b, err
			}
			switch k {
			case "ts":
				err = r.ts(&b)
			case "events":
				b.Events, err = r.events()
				seenEvents = true
			case "data_parallel_rank":
				err = r.rank(&b)
			default:
				err = r.Skip()
			}
			if err != nil {
				return b, fmt.Errorf("batch.%s: %w", k, err)
			}
		}
		if !seenEvents {
			return b, fmt.Errorf("batch: map without events")
		}
	default:
		return b, fmt.Errorf("batch: unexpected %v", t)
	}
	return b, nil
}

// key reads a map key and returns its interned name when it is one the
// decoder knows, else "" (unknown and non-string keys are skipped by the
// caller's default case).
func (r *Reader) key() (string, error) {
	b, ok := r.rawStr()
	if !ok {
		t, err := r.Peek()
		if err != nil {
			return "", err
		}
		if t == Str || t == Bin {
			return "", ErrTruncated
		}
		return "", r.Skip()
	}
	return knownKey(b), nil
}

// word reads a string that usually takes one of a few values (tags, media,
// attention kinds) without allocating for those values.
func (r *Reader) word() (string, error) {
	b, ok := r.rawStr()
	if !ok {
		return r.String()
	}
	switch string(b) {
	case tagStored:
		return tagStored, nil
	case tagRemoved:
		return tagRemoved, nil
	case tagCleared:
		return tagCleared, nil
	case tagStoredWithMeta:
		return tagStoredWithMeta, nil
	case "GPU":
		return "GPU", nil
	case "CPU":
		return "CPU", nil
	case "CPU_PINNED":
		return "CPU_PINNED", nil
	case "full_attention":
		return "full_attention", nil
	case "sliding_window":
		return "sliding_window", nil
	case "mamba":
		return "mamba", nil
	}
	return string(b), nil
}

// knownKey interns the map keys the decoder reads (switching on string(b)
// does not allocate).
func knownKey(b []byte) string {
	switch string(b) {
	case "type":
		return "type"
	case "ts":
		return "ts"
	case "events":
		return "events"
	case "data_parallel_rank":
		return "data_parallel_rank"
	case "block_hashes":
		return "block_hashes"
	case "parent_block_hash":
		return "parent_block_hash"
	case "token_ids":
		return "token_ids"
	case "block_size":
		return "block_size"
	case "lora_id":
		return "lora_id"
	case "medium":
		return "medium"
	case "lora_name":
		return "lora_name"
	case "cache_salt":
		return "cache_salt"
	case "metadata":
		return "metadata"
	case "extra_keys":
		return "extra_keys"
	case "group_idx":
		return "group_idx"
	case "kv_cache_spec_kind":
		return "kv_cache_spec_kind"
	}
	return ""
}

func (r *Reader) ts(b *engine.Batch) error {
	if null, err := r.IsNil(); err != nil || null {
		return err
	}
	f, err := r.Float()
	if err != nil {
		return err
	}
	// Keep only plausible wall-clock seconds (year 1970 to about 2286).
	if f > 0 && f < 1e10 {
		sec, frac := math.Modf(f)
		b.TS = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	}
	return nil
}

func (r *Reader) rank(b *engine.Batch) error {
	if null, err := r.IsNil(); err != nil || null {
		return err
	}
	v, err := r.Int()
	if err != nil {
		return err
	}
	if v >= 0 && v <= math.MaxInt32 {
		b.Rank = int(v)
	}
	return nil
}

func (r *Reader) events() ([]engine.Event, error) {
	n, err := r.ArrayLen()
	if err != nil {
		return nil, err
	}
	out := make([]engine.Event, 0, max(n, 0))
	for i := range max(n, 0) {
		ev, err := r.event()
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		if ev != nil {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (r *Reader) event() (engine.Event, error) {
	t, err := r.Peek()
	if err != nil {
		return nil, err
	}
	var f fields
	switch t {
	case Array:
		n, err := r.ArrayLen()
		if err != nil {
			return nil, err
		}
		if n < 1 {
			return nil, fmt.Errorf("empty event array")
		}
		if f.tag, err = r.word(); err != nil {
			return nil, fmt.Errorf("tag: %w", err)
		}
		var names []string
		switch f.tag {
		case tagStored, tagStoredWithMeta:
			names = storedPositions[:]
		case tagRemoved:
			names = removedPositions[:]
		}
		for i := 1; i < n; i++ {
			name := ""
			if i < len(names) {
				name = names[i]
			}
			if err := r.field(&f, name); err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", f.tag, i, err)
			}
		}
	case Map:
		n, err := r.MapLen()
		if err != nil {
			return nil, err
		}
		for range n {
			k, err := r.key()
			if err != nil {
				return nil, err
			}
			if k == "type" {
				if f.tag, err = r.word(); err != nil {
					return nil, fmt.Errorf("type: %w", err)
				}
				continue
			}
			if err := r.field(&f, k); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		}
	default:
		return nil, fmt.Errorf("event: unexpected %v", t)
	}
	return f.event(), nil
}
