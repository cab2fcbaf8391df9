package llamacpp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxJSONBytes bounds a /slots or /props answer when the caller gives
// no limit. /slots without ?fields carries each slot's sampling parameters
// (a few KB a slot); /props carries the chat template.
const DefaultMaxJSONBytes = 4 << 20

// MaxSlots bounds the slots read from one /slots answer; llama-server's
// --parallel is far below it.
const MaxSlots = 4096

// ErrUnreadable is wrapped by every error of ParseSlots and ParseProps.
var ErrUnreadable = errors.New("llama.cpp answer unreadable")

// Slot is one llama-server slot as /slots reports it.
type Slot struct {
	// ID is the slot's id.
	ID int
	// NCtx is the slot's context size in tokens.
	NCtx int
	// Processing reports whether the slot is serving a request.
	Processing bool
	// PromptTokens is the number of tokens of the slot's prompt, those of the
	// request it serves or last served (0 before its first).
	PromptTokens int
	// Decoded is the number of tokens generated for that request so far.
	Decoded int
}

// slotJSON is one element of /slots: server_slot::to_json in
// tools/server/server-context.cpp. Releases before is_processing reported a
// numeric state (0 idle, 1 processing).
type slotJSON struct {
	ID           *int  `json:"id"`
	NCtx         *int  `json:"n_ctx"`
	IsProcessing *bool `json:"is_processing"`
	State        *int  `json:"state"`
	NPrompt      int   `json:"n_prompt_tokens"`
	NextToken    []struct {
		NDecoded int `json:"n_decoded"`
	} `json:"next_token"`
}

// ParseSlots reads at most maxBytes (DefaultMaxJSONBytes when <= 0) of a
// /slots answer. Every slot must carry an id, a positive n_ctx and its state.
func ParseSlots(r io.Reader, maxBytes int64) ([]Slot, error) {
	buf, err := readAll(r, maxBytes, "/slots")
	if err != nil {
		return nil, err
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(buf, &raw); err != nil {
		return nil, fmt.Errorf("parse /slots: %w: %w", ErrUnreadable, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("parse /slots: %w: no slot", ErrUnreadable)
	}
	if len(raw) > MaxSlots {
		return nil, fmt.Errorf("parse /slots: %w: %d slots, more than %d", ErrUnreadable, len(raw), MaxSlots)
	}
	out := make([]Slot, 0, len(raw))
	for i, m := range raw {
		var sj slotJSON
		if err := json.Unmarshal(m, &sj); err != nil {
			return nil, fmt.Errorf("parse /slots[%d]: %w: %w", i, ErrUnreadable, err)
		}
		if sj.ID == nil || sj.NCtx == nil || *sj.NCtx <= 0 || *sj.NCtx > 1<<30 {
			return nil, fmt.Errorf("parse /slots[%d]: %w: needs an id and n_ctx in 1..2^30", i, ErrUnreadable)
		}
		s := Slot{ID: *sj.ID, NCtx: *sj.NCtx, PromptTokens: clamp(sj.NPrompt), Decoded: 0}
		switch {
		case sj.IsProcessing != nil:
			s.Processing = *sj.IsProcessing
		case sj.State != nil:
			s.Processing = *sj.State != 0
		default:
			return nil, fmt.Errorf("parse /slots[%d]: %w: no is_processing nor state", i, ErrUnreadable)
		}
		if len(sj.NextToken) > 0 {
			s.Decoded = clamp(sj.NextToken[0].NDecoded)
		}
		out = append(out, s)
	}
	return out, nil
}

// Props is what the sidecar reads from /props.
type Props struct {
	// TotalSlots is the number of slots (--parallel).
	TotalSlots int
	// SlotContext is each slot's context size in tokens.
	SlotContext int
	// ModelAlias is the served model name (--alias, else the file's).
	ModelAlias string
	// BuildInfo names the server's build.
	BuildInfo string
}

// propsJSON is get_res_props in tools/server/server-context.cpp.
type propsJSON struct {
	TotalSlots *int `json:"total_slots"`
	Defaults   struct {
		NCtx *int `json:"n_ctx"`
	} `json:"default_generation_settings"`
	ModelAlias string `json:"model_alias"`
	BuildInfo  string `json:"build_info"`
}

// ParseProps reads at most maxBytes (DefaultMaxJSONBytes when <= 0) of a
// /props answer; total_slots and default_generation_settings.n_ctx must be
// positive.
func ParseProps(r io.Reader, maxBytes int64) (Props, error) {
	buf, err := readAll(r, maxBytes, "/props")
	if err != nil {
		return Props{}, err
	}
	var pj propsJSON
	if err := json.Unmarshal(buf, &pj); err != nil {
		return Props{}, fmt.Errorf("parse /props: %w: %w", ErrUnreadable, err)
	}
	if pj.TotalSlots == nil || *pj.TotalSlots <= 0 || *pj.TotalSlots > MaxSlots {
		return Props{}, fmt.Errorf("parse /props: %w: total_slots must be in 1..%d", ErrUnreadable, MaxSlots)
	}
	if pj.Defaults.NCtx == nil || *pj.Defaults.NCtx <= 0 || *pj.Defaults.NCtx > 1<<30 {
		return Props{}, fmt.Errorf("parse /props: %w: default_generation_settings.n_ctx must be in 1..2^30", ErrUnreadable)
	}
	return Props{TotalSlots: *pj.TotalSlots, SlotContext: *pj.Defaults.NCtx, ModelAlias: pj.ModelAlias, BuildInfo: pj.BuildInfo}, nil
}

// CapacityTokens is the number of prompt tokens the server can hold for
// reuse: every slot's context, where the prompt of its last request stays
// until another request takes the slot, plus the host-memory prompt cache
// (--cache-ram, on by default), which keeps at least one context's worth of
// tokens besides (server_prompt_cache in tools/server/server-task.h is built
// with the context size as its token floor). slots, when known, overrides
// the per-slot figures of props.
func CapacityTokens(p Props, slots []Slot) int {
	total := 0
	if len(slots) > 0 {
		for _, s := range slots {
			total += s.NCtx
		}
	} else {
		total = p.TotalSlots * p.SlotContext
	}
	return 2 * total
}

// Usage estimates the KV usage in [0,1] from the slots: the tokens held by
// slots serving a request (prompt and generated, at most the slot's
// context) over every slot's context. Idle slots keep their last prompt as
// reusable cache, which, as in vLLM's usage gauge, is not counted as used.
func Usage(slots []Slot) float64 {
	var used, total float64
	for _, s := range slots {
		total += float64(s.NCtx)
		if s.Processing {
			used += float64(min(s.PromptTokens+s.Decoded, s.NCtx))
		}
	}
	if total <= 0 {
		return 0
	}
	return min(max(used/total, 0), 1)
}

// Processing counts the slots serving a request.
func Processing(slots []Slot) int {
	n := 0
	for _, s := range slots {
		if s.Processing {
			n++
		}
	}
	return n
}

func readAll(r io.Reader, maxBytes int64, what string) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxJSONBytes
	}
	buf, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w: %w", what, ErrUnreadable, err)
	}
	if int64(len(buf)) > maxBytes {
		return nil, fmt.Errorf("read %s: %w: more than %d bytes", what, ErrUnreadable, maxBytes)
	}
	return bytes.TrimSpace(buf), nil
}

func clamp(n int) int { return min(max(n, 0), 1<<30) }
