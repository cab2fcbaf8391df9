package blockset

import (
	"slices"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// fullAttention reports whether a KV-cache group kind holds the prompt's
// prefix the way the router hashes it. "" is an engine that does not say
// (vLLM before v0.22, SGLang).
func fullAttention(kind string) bool {
	switch kind {
	case "", "full_attention", "mla_attention", "sink_full_attention":
		return true
	}
	return false
}

func (s *Set) stored(r int, ev engine.BlockStored) {
	n := len(ev.EngineHashes)
	if n == 0 {
		return
	}
	if !fullAttention(ev.SpecKind) {
		s.stats.SkippedGroup += n
		return
	}
	rs := s.rank(r)
	sl := slot{medium: s.mediumIndex(ev.Medium), group: int32(ev.GroupIdx)}
	if len(ev.Tokens) == 0 || ev.BlockSize <= 0 {
		// Placeholder or hash-only announcement (offload tiers): map through
		// an engine hash this rank already knows.
		for _, h := range ev.EngineHashes {
			m := rs.engine[h]
			if m == nil {
				s.stats.SkippedPlaceholder++
				continue
			}
			s.addSlot(rs, m, sl)
			s.stats.PlaceholderMapped++
		}
		return
	}
	if s.blockSize == 0 {
		s.blockSize = ev.BlockSize
	}
	switch {
	case ev.BlockSize < s.blockSize:
		s.stats.SkippedPartial += n
		return
	case ev.BlockSize > s.blockSize:
		s.stats.SkippedGroup += n // another group's block size
		return
	case ev.Opaque:
		s.stats.SkippedOpaque += n
		return
	case ev.LoRA == "" && ev.LoRAID != 0:
		// Before v0.14 vLLM sent only a numeric adapter id: the name that
		// seeds the router's hash is unknown.
		s.stats.SkippedLoRA += n
		return
	}
	var prev kvblock.Hash
	if ev.Parent == nil {
		prev = s.seed(ev.LoRA, ev.CacheSalt)
	} else {
		m := rs.engine[*ev.Parent]
		if m == nil {
			s.stats.SkippedOrphan += n
			return
		}
		prev = m.router
	}
	bs := s.blockSize
	full := min(n, len(ev.Tokens)/bs)
	for i := range full {
		prev = kvblock.Next(prev, ev.Tokens[i*bs:(i+1)*bs])
		s.put(rs, ev.EngineHashes[i], prev, sl)
		s.stats.Stored++
	}
	s.stats.SkippedPartial += n - full
}

// put records that engine hash h of a rank is router hash router, held in
// slot sl. A re-announcement is a no-op; an engine hash that now names other
// tokens moves all its holders.
func (s *Set) put(rs *rankState, h uint64, router kvblock.Hash, sl slot) {
	m := rs.engine[h]
	if m == nil {
		m = &mapping{router: router}
		rs.engine[h] = m
	} else if m.router != router {
		if onGPU(m.slots) {
			rs.gpu--
		}
		for _, old := range m.slots {
			s.release(m.router, old.medium)
		}
		m.slots = m.slots[:0]
		m.router = router
	}
	s.addSlot(rs, m, sl)
}

func (s *Set) addSlot(rs *rankState, m *mapping, sl slot) {
	if slices.Contains(m.slots, sl) {
		return
	}
	if sl.medium == gpuMedium && !onGPU(m.slots) {
		rs.gpu++
	}
	m.slots = append(m.slots, sl)
	s.hold(m.router, sl.medium)
}

// gpuMedium is the GPU's medium index (the first interned).
const gpuMedium = 0

// onGPU reports whether a mapping has a GPU slot (in any group).
func onGPU(slots []slot) bool {
	for _, sl := range slots {
		if sl.medium == gpuMedium {
			return true
		}
	}
	return false
}

func (s *Set) removed(r int, ev engine.BlockRemoved) {
	rs := s.rank(r)
	sl := slot{medium: s.mediumIndex(ev.Medium), group: int32(ev.GroupIdx)}
	for _, h := range ev.EngineHashes {
		m := rs.engine[h]
		if m == nil {
			s.stats.RemovedUnknown++
			continue
		}
		i := slices.Index(m.slots, sl)
		if i < 0 {
			s.stats.RemovedUnknown++
			continue
		}
		m.slots = slices.Delete(m.slots, i, i+1)
		if sl.medium == gpuMedium && !onGPU(m.slots) {
			rs.gpu--
		}
		s.release(m.router, sl.medium)
		s.stats.Removed++
		if len(m.slots) == 0 {
			delete(rs.engine, h)
		}
	}
}
