package hf

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of "added_tokens" after load.
type addedToken struct {
	id         uint32
	content    string
	special    bool
	normalized bool
	singleWord bool // match only between non-word characters
	lstrip     bool // the token takes the white space before it
	rstrip     bool // the token takes the white space after it
}

// trieNode is a node of a byte trie; children are kept sorted by byte.
type trieNode struct {
	keys     []byte
	children []int32
	id       uint32
	terminal bool
}

// matcher finds added tokens in text with leftmost-longest semantics: the
// earliest match wins and, among matches starting there, the longest, as the
// Rust library's Aho-Corasick automaton (MatchKind::LeftmostLongest) does.
type matcher struct {
	nodes []trieNode
	first [256]bool // bytes that start some token
	// flags holds the tokens with single_word, lstrip or rstrip set.
	flags map[uint32]addedToken
}

func newMatcher(tokens map[string]uint32, flags map[uint32]addedToken) *matcher {
	if len(tokens) == 0 {
		return nil
	}
	m := &matcher{nodes: []trieNode{{}}, flags: flags}
	for s, id := range tokens {
		if s == "" {
			continue
		}
		m.first[s[0]] = true
		n := int32(0)
		for i := 0; i < len(s); i++ {
			n = m.child(n, s[i], true)
		}
		m.nodes[n].terminal = true
		m.nodes[n].id = id
	}
	return m
}

// child returns the child of n for byte c, creating it when create is set;
// -1 when absent.
func (m *matcher) child(n int32, c byte, create bool) int32 {
	node := &m.nodes[n]
	lo, hi := 0, len(node.keys)
	for lo < hi {
		mid := (lo + hi) / 2
		if node.keys[mid] < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(node.keys) && node.keys[lo] == c {
		return node.children[lo]
	}
	if !create {
		return -1
	}
	idx := int32(len(m.nodes))
	node.keys = append(node.keys, 0)
	copy(node.keys[lo+1:], node.keys[lo:])
	node.keys[lo] = c
	node.children = append(node.children, 0)
	copy(node.children[lo+1:], node.children[lo:])
	node.children[lo] = idx
	m.nodes = append(m.nodes, trieNode{})
	return idx
}

// longestAt returns the end and id of the longest token starting at s[i:].
func (m *matcher) longestAt(s string, i int) (end int, id uint32, ok bool) {
	n := int32(0)
	for j := i; j < len(s); j++ {
		n = m.child(n, s[j], false)
		if n < 0 {
			break
		}
		if m.nodes[n].terminal {
			end, id, ok = j+1, m.nodes[n].id, true
		}
	}
	return end, id, ok
}

// piece is a part of a text: either an added token (isToken) or plain text.
type piece struct {
	text    string
	id      uint32
	isToken bool
}

// split cuts s into plain pieces and added tokens, appending to dst. Empty
// plain pieces are dropped.
func (m *matcher) split(s string, dst []piece) []piece {
	if m == nil {
		if s != "" {
			dst = append(dst, piece{text: s})
		}
		return dst
	}
	prev := 0
	for i := 0; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		end, id, ok := m.longestAt(s, i)
		if !ok {
			continue
		}
		start, stop := i, end
		// The search goes on after this match whatever happens to it, as
		// the Rust library's non-overlapping Aho-Corasick iteration does.
		i = end - 1
		if f, ok := m.flags[id]; ok {
			if f.singleWord && ((start > 0 && endsWithWord(s[:start])) || (stop < len(s) && startsWithWord(s[stop:]))) {
				continue
			}
			if f.lstrip {
				start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), prev)
			}
			if f.rstrip {
				stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
			}
		}
		start = max(start, prev)
		if prev < start {
			dst = append(dst, piece{text: s[prev:start]})
		}
		dst = append(dst, piece{text: s[start:stop], id: id, isToken: true})
		prev = stop
		i = max(i, stop-1)
	}
	if prev < len(s) {
		dst = append(dst, piece{text: s[prev:]})
	}
	return dst
}

// isWordChar reports whether c matches \w of the Rust regex crate:
// Alphabetic, marks, decimal digits, connector punctuation, joiners.
func isWordChar(c rune) bool {
	return unicode.IsLetter(c) || unicode.IsMark(c) || unicode.Is(unicode.Nd, c) ||
		unicode.Is(unicode.Nl, c) || unicode.Is(unicode.Other_Alphabetic, c) ||
		unicode.Is(unicode.Pc, c) || unicode.Is(unicode.Join_Control, c)
}

func endsWithWord(s string) bool {
	c, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordChar(c)
}

func startsWithWord(s string) bool {
	c, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordChar(c)
}
