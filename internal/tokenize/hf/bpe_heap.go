package hf

// mergeCand is a candidate merge of the symbol at pos with its next one.
// key packs rank<<32 | pos, so the lowest key is the merge to apply next:
// lowest rank first, leftmost on ties.
type mergeCand struct {
	key   uint64
	newID uint32
}

func newCand(rankID uint64, pos int32) mergeCand {
	return mergeCand{key: rankID&^0xFFFFFFFF | uint64(uint32(pos)), newID: uint32(rankID)}
}

func (c mergeCand) pos() int32 { return int32(uint32(c.key)) }

// candHeap is a 4-ary min-heap of merge candidates (shallower than a binary
// heap, so fewer cache misses on long words).
type candHeap []mergeCand

func (h *candHeap) push(c mergeCand) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 4
		if s[p].key <= c.key {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = c
}

func (h *candHeap) pop() mergeCand {
	s := *h
	top := s[0]
	n := len(s) - 1
	last := s[n]
	s = s[:n]
	*h = s
	if n > 0 {
		siftDown(s, 0, last)
	}
	return top
}

// siftDown places c at or below index i.
func siftDown(s candHeap, i int, c mergeCand) {
	n := len(s)
	for {
		first := 4*i + 1
		if first >= n {
			break
		}
		m := first
		end := min(first+4, n)
		for j := first + 1; j < end; j++ {
			if s[j].key < s[m].key {
				m = j
			}
		}
		if s[m].key >= c.key {
			break
		}
		s[i] = s[m]
		i = m
	}
	s[i] = c
}
