package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// bpe is the BPE model of tokenizer.json: a vocabulary, ranked merges and
// the options that change how a word is cut into initial symbols.
type bpe struct {
	vocab   map[string]uint32
	idToTok []string // by id; "" where the id is unused
	// merges maps a pair (left<<32 | right) to (rank<<32 | merged id).
	merges        map[uint64]uint64
	unkID         uint32
	hasUnk        bool
	fuseUnk       bool
	byteFallback  bool
	ignoreMerges  bool
	contPrefix    string
	endSuffix     string
	byteTokens    [256]uint32 // ids of "<0xXX>" when byteFallback
	hasByteTokens bool

	// Raw-bytes mode (byte-level models): words arrive as raw bytes rather
	// than byte-level characters. rawVocab maps the bytes a token stands for
	// to its id, byteIDs the id of each single byte.
	rawBytes bool
	rawVocab map[string]uint32
	byteIDs  [256]uint32
}

// enableRawBytes switches a byte-level model to work on raw bytes, which
// saves mapping every word to byte-level characters. It reports false (and
// changes nothing) when the model cannot: every byte must have a token, and
// no prefix, suffix or fallback may apply.
func (m *bpe) enableRawBytes() bool {
	if m.contPrefix != "" || m.endSuffix != "" || m.byteFallback {
		return false
	}
	var ids [256]uint32
	for b := 0; b < 256; b++ {
		id, ok := m.vocab[byteToStr[b]]
		if !ok {
			return false
		}
		ids[b] = id
	}
	raw := make(map[string]uint32, len(m.vocab))
	var buf []byte
	for tok, id := range m.vocab {
		buf = buf[:0]
		ok := true
		for _, c := range tok {
			b, in := runeToByte[c]
			if !in {
				ok = false
				break
			}
			buf = append(buf, b)
		}
		if ok && len(tok) > 0 {
			raw[string(buf)] = id
		}
	}
	m.rawBytes, m.rawVocab, m.byteIDs = true, raw, ids
	return true
}

type bpeJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// parseModel builds the model of a tokenizer.json; only BPE is supported.
func parseModel(raw json.RawMessage) (*bpe, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("model is missing")
	}
	var v bpeJSON
	if err := strictUnmarshal(raw, &v); err != nil {
		typ, terr := componentType(raw)
		if terr == nil && typ != "" && typ != "BPE" {
			return nil, fmt.Errorf("model %q is not supported", typ)
		}
		return nil, fmt.Errorf("model: %w", err)
	}
	if v.Type != "" && v.Type != "BPE" {
		return nil, fmt.Errorf("model %q is not supported", v.Type)
	}
	if v.Dropout != nil && *v.Dropout != 0 {
		return nil, fmt.Errorf("model BPE: dropout %v is not supported (encoding would not be deterministic)", *v.Dropout)
	}
	// The vocabulary and the merges are the bulk of a tokenizer.json: decode
	// them in parallel.
	var (
		vocab            map[string]uint32
		pairs            [][2]string
		vocabErr, merErr error
		wg               sync.WaitGroup
	)
	wg.Go(func() { pairs, merErr = parseMerges(v.Merges) })
	if err := json.Unmarshal(v.Vocab, &vocab); err != nil && !isNull(v.Vocab) {
		vocabErr = fmt.Errorf("model BPE: vocab: %w", err)
	}
	wg.Wait()
	if vocabErr != nil {
		return nil, vocabErr
	}
	if merErr != nil {
		return nil, fmt.Errorf("model BPE: %w", merErr)
	}
	m := &bpe{
		vocab:        vocab,
		fuseUnk:      v.FuseUnk,
		byteFallback: v.ByteFallback,
		ignoreMerges: v.IgnoreMerges,
	}
	if v.ContinuingSubwordPrefix != nil {
		m.contPrefix = *v.ContinuingSubwordPrefix
	}
	if v.EndOfWordSuffix != nil {
		m.endSuffix = *v.EndOfWordSuffix
	}
	maxID := uint32(0)
	for _, id := range m.vocab {
		maxID = max(maxID, id)
	}
	if len(m.vocab) > 0 {
		// Ids index a slice; refuse ids far beyond the vocabulary's size
		// rather than allocate for them.
		if int64(maxID) >= 2*int64(len(m.vocab))+1<<16 {
			return nil, fmt.Errorf("model BPE: id %d is far beyond the %d vocabulary entries", maxID, len(m.vocab))
		}
		m.idToTok = make([]string, maxID+1)
	}
	for tok, id := range m.vocab {
		m.idToTok[id] = tok
	}
	if v.UnkToken != nil {
		id, ok := m.vocab[*v.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model BPE: unk_token %q is not in the vocabulary", *v.UnkToken)
		}
		m.unkID, m.hasUnk = id, true
	}
	if m.byteFallback {
		m.hasByteTokens = true
		for b := 0; b < 256; b++ {
			id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]
			if !ok {
				m.hasByteTokens = false
				break
			}
			m.byteTokens[b] = id
		}
	}
	m.merges = make(map[uint64]uint64, len(pairs))
	var buf []byte
	for rank, p := range pairs {
		a, ok := m.vocab[p[0]]
		if !ok {
			return nil, fmt.Errorf("model BPE: merge %d: %q is not in the vocabulary", rank, p[0])
		}
		b, ok := m.vocab[p[1]]
		if !ok {
			return nil, fmt.Errorf("model BPE: merge %d: %q is not in the vocabulary", rank, p[1])
		}
		right := p[1]
		if m.contPrefix != "" && strings.HasPrefix(right, m.contPrefix) {
			right = right[len(m.contPrefix):]
		}
		buf = append(append(buf[:0], p[0]...), right...)
		n, ok := m.vocab[string(buf)]
		if !ok {
			return nil, fmt.Errorf("model BPE: merge %d: %q is not in the vocabulary", rank, buf)
		}
		// A later duplicate of a pair replaces the earlier one, as the Rust
		// library's map collection does.
		m.merges[uint64(a)<<32|uint64(b)] = uint64(rank)<<32 | uint64(n)
	}
	return m, nil
}

// parseMerges reads merges as ["a b", ...] or [["a", "b"], ...].
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	// The first element tells the format; decoding the wrong one first would
	// scan hundreds of thousands of merges twice.
	if rest := bytes.TrimSpace(bytes.TrimPrefix(t, []byte("["))); len(rest) > 0 && rest[0] == '"' {
		var asStrings []string
		if err := json.Unmarshal(t, &asStrings); err != nil {
			return nil, fmt.Errorf("merges: %w", err)
		}
		out := make([][2]string, len(asStrings))
		for i, s := range asStrings {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("merge %d: %q is not two space-separated tokens", i, s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var asPairs [][2]string
	if err := json.Unmarshal(t, &asPairs); err != nil {
		return nil, fmt.Errorf("merges: %w", err)
	}
	return asPairs, nil
}

// symbol is one node of the doubly linked list a word is merged in.
type symbol struct {
	id         uint32
	prev, next int32
	len        int32 // bytes of the word it covers; 0 once merged away
}

// bpeScratch holds the reusable buffers of one word's encoding.
type bpeScratch struct {
	syms []symbol
	heap candHeap
	buf  []byte
}

// tokenize appends the ids of word w to dst.
func (m *bpe) tokenize(w string, dst []uint32, sc *bpeScratch) []uint32 {
	if w == "" {
		return dst
	}
	if m.rawBytes {
		return m.tokenizeRaw(w, dst, sc)
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[w]; ok {
			return append(dst, id)
		}
	}
	syms := sc.syms[:0]
	add := func(id uint32, n int) {
		syms = append(syms, symbol{id: id, prev: int32(len(syms)) - 1, next: -1, len: int32(n)})
		if len(syms) > 1 {
			syms[len(syms)-2].next = int32(len(syms)) - 1
		}
	}
	unkLen := -1 // pending unknown run, in bytes; -1 when none
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+size]
		first, last := i == 0, i+size == len(w)
		key := s
		if (!first && m.contPrefix != "") || (last && m.endSuffix != "") {
			b := sc.buf[:0]
			if !first {
				b = append(b, m.contPrefix...)
			}
			b = append(b, s...)
			if last {
				b = append(b, m.endSuffix...)
			}
			sc.buf = b
			key = string(b)
		}
		i += size
		if id, ok := m.vocab[key]; ok {
			if unkLen >= 0 {
				add(m.unkID, unkLen)
				unkLen = -1
			}
			add(id, size)
			continue
		}
		if m.byteFallback && m.hasByteTokens {
			for j := 0; j < len(key); j++ {
				add(m.byteTokens[key[j]], 1)
			}
			continue
		}
		if m.hasUnk {
			switch {
			case unkLen >= 0 && m.fuseUnk:
				unkLen += size
			case unkLen >= 0:
				add(m.unkID, unkLen)
				unkLen = size
			default:
				unkLen = size
			}
		}
	}
	if unkLen >= 0 {
		add(m.unkID, unkLen)
	}
	sc.syms = syms
	if len(syms) > 1 && len(m.merges) > 0 {
		m.mergeAll(sc)
		syms = sc.syms
	}
	for _, s := range syms {
		if s.len != 0 {
			dst = append(dst, s.id)
		}
	}
	return dst
}

// tokenizeRaw is tokenize in raw-bytes mode: one initial symbol per byte.
func (m *bpe) tokenizeRaw(w string, dst []uint32, sc *bpeScratch) []uint32 {
	if m.ignoreMerges || len(w) == 1 {
		if id, ok := m.rawVocab[w]; ok {
			return append(dst, id)
		}
	}
	syms := sc.syms[:0]
	for i := 0; i < len(w); i++ {
		syms = append(syms, symbol{id: m.byteIDs[w[i]], prev: int32(i) - 1, next: int32(i) + 1, len: 1})
	}
	syms[len(syms)-1].next = -1
	sc.syms = syms
	if len(syms) > 1 && len(m.merges) > 0 {
		m.mergeAll(sc)
		syms = sc.syms
	}
	for _, s := range syms {
		if s.len != 0 {
			dst = append(dst, s.id)
		}
	}
	return dst
}

// mergeAll applies the merges in rank order (ties: leftmost first), the
// priority-queue algorithm of the Rust library.
func (m *bpe) mergeAll(sc *bpeScratch) {
	syms := sc.syms
	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if v, ok := m.merges[uint64(syms[i].id)<<32|uint64(syms[i+1].id)]; ok {
			h = append(h, newCand(v, int32(i)))
		}
	}
	// Heapify.
	for i := (len(h) - 2) / 4; len(h) > 1 && i >= 0; i-- {
		siftDown(h, i, h[i])
	}
	for len(h) > 0 {
		top := h.pop()
		pos := top.pos()
		cur := &syms[pos]
		if cur.len == 0 || cur.next == -1 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		v, ok := m.merges[uint64(cur.id)<<32|uint64(right.id)]
		if !ok || uint32(v) != top.newID {
			continue
		}
		cur.id = top.newID
		cur.len += right.len
		cur.next = right.next
		syms[nextPos].len = 0
		if right.next >= 0 && int(right.next) < len(syms) {
			syms[right.next].prev = pos
		}
		if cur.prev >= 0 {
			p := syms[cur.prev]
			if v, ok := m.merges[uint64(p.id)<<32|uint64(cur.id)]; ok {
				h.push(newCand(v, cur.prev))
			}
		}
		if cur.next >= 0 && int(cur.next) < len(syms) {
			n := syms[cur.next]
			if v, ok := m.merges[uint64(cur.id)<<32|uint64(n.id)]; ok {
				h.push(newCand(v, pos))
			}
		}
	}
	sc.heap = h
}

// token returns the vocabulary string of id.
func (m *bpe) token(id uint32) (string, bool) {
	if int(id) >= len(m.idToTok) {
		return "", false
	}
	t := m.idToTok[id]
	if t == "" {
		_, ok := m.vocab[""]
		return "", ok && m.vocab[""] == id
	}
	return t, true
}
