package blockset

import (
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// Contains reports whether a router block is held in any medium.
func (s *Set) Contains(h kvblock.Hash) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.blocks[h]
	return ok
}

// ContainsIn reports whether a router block is held in a medium.
func (s *Set) ContainsIn(h kvblock.Hash, medium string) bool {
	medium = engine.NormalizeMedium(medium)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.blocks[h]
	if e == nil {
		return false
	}
	for i, m := range s.media {
		if m == medium {
			return e.counts[i] > 0
		}
	}
	return false
}

// Len returns the number of distinct router blocks held in any medium.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.blocks)
}

// LenIn returns the number of router blocks held in a medium.
func (s *Set) LenIn(medium string) int {
	medium = engine.NormalizeMedium(medium)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.media {
		if m == medium {
			return s.perMedium[i]
		}
	}
	return 0
}

// Blocks appends to dst the router blocks held in medium (in any medium when
// medium is ""), in no particular order.
func (s *Set) Blocks(dst []kvblock.Hash, medium string) []kvblock.Hash {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := -1
	if medium != "" {
		medium = engine.NormalizeMedium(medium)
		for i, m := range s.media {
			if m == medium {
				idx = i
			}
		}
		if idx < 0 {
			return dst
		}
	}
	for h, e := range s.blocks {
		if idx < 0 || e.counts[idx] > 0 {
			dst = append(dst, h)
		}
	}
	return dst
}

// Media returns the media that hold a router block.
func (s *Set) Media(h kvblock.Hash) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.blocks[h]
	if e == nil {
		return nil
	}
	var out []string
	for i, c := range e.counts {
		if c > 0 {
			out = append(out, s.media[i])
		}
	}
	return out
}

// Drain appends the changes since the previous Drain to dst, in order, and
// empties the feed. overflow reports that more than MaxPendingChanges
// accumulated and were dropped: the caller must rebuild from Blocks (and the
// feed resumes from now).
func (s *Set) Drain(dst []Change) (out []Change, overflow bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out = append(dst, s.changes...)
	overflow = s.overflow
	s.changes = s.changes[:0]
	s.overflow = false
	return out, overflow
}

// Stats returns the cumulative counters.
func (s *Set) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}
