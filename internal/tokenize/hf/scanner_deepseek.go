package hf

import (
	"unicode"
	"unicode/utf8"
)

// The three Split regexes of DeepSeek V3 (and R1), applied in sequence.
const (
	deepseekDigits = "\\p{N}{1,3}"
	deepseekCJK    = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	deepseekMain   = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

// numberRuns matches \p{N}{1,k}: runs of numbers cut every k characters.
type numberRuns struct{ max int }

func (p numberRuns) findAll(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		c, n := classAt(s, i)
		if c != clsNumber {
			i += n
			continue
		}
		j := i + n
		for k := 1; k < p.max && j < len(s); k++ {
			c, n := classAt(s, j)
			if c != clsNumber {
				break
			}
			j += n
		}
		dst = append(dst, [2]int{i, j})
		i = j
	}
	return dst
}

// isDeepseekCJK reports whether c is in [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff].
func isDeepseekCJK(c rune) bool {
	return c >= 0x4e00 && c <= 0x9fa5 || c >= 0x3040 && c <= 0x309f || c >= 0x30a0 && c <= 0x30ff
}

// runeRuns matches maximal runs of the characters its function accepts.
type runeRuns func(rune) bool

func (f runeRuns) findAll(s string, dst [][2]int) [][2]int {
	start := -1
	for i, c := range s {
		if f(c) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			dst = append(dst, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		dst = append(dst, [2]int{start, len(s)})
	}
	return dst
}

// Classes of the DeepSeek main regex, as bits.
const (
	dL  = 1 << iota // \p{L}
	dM              // \p{M}
	dPS             // \p{P} or \p{S}
	dSp             // \s
	dNL             // \r or \n
	dAP             // ASCII punctuation
	dAL             // ASCII letter
)

var asciiDeep [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		asciiDeep[c] = deepClassSlow(rune(c))
	}
}

func deepClassSlow(c rune) uint8 {
	var f uint8
	switch runeClassSlow(c) {
	case clsNewline:
		f |= dNL | dSp
	case clsSpace:
		f |= dSp
	case clsLetter:
		f |= dL
	}
	if unicode.IsMark(c) {
		f |= dM
	}
	if unicode.IsPunct(c) || unicode.IsSymbol(c) {
		f |= dPS
	}
	if c < utf8.RuneSelf && isPunc(c) {
		f |= dAP
	}
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		f |= dAL
	}
	return f
}

func deepAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiDeep[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return deepClassSlow(refRune(r)), size
}

// deepseekScanner matches deepseekMain. Unlike the GPT-4 patterns it can
// leave characters unmatched (numbers, for one).
type deepseekScanner struct{}

func (deepseekScanner) findAll(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		if end := deepseekMatchAt(s, i); end >= 0 {
			dst = append(dst, [2]int{i, end})
			i = end
			continue
		}
		_, n := deepAt(s, i)
		i += n
	}
	return dst
}

// deepRun returns the end of the run of characters with any of the bits.
func deepRun(s string, j int, bits uint8) int {
	for j < len(s) {
		f, n := deepAt(s, j)
		if f&bits == 0 {
			break
		}
		j += n
	}
	return j
}

func deepseekMatchAt(s string, i int) int {
	f0, n0 := deepAt(s, i)
	// [ASCII punctuation][A-Za-z]+
	if f0&dAP != 0 && i+1 < len(s) {
		if f1, _ := deepAt(s, i+1); f1&dAL != 0 {
			return deepRun(s, i+1, dAL)
		}
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	if f0&(dNL|dL|dPS) == 0 && i+n0 < len(s) {
		if f1, _ := deepAt(s, i+n0); f1&(dL|dM) != 0 {
			return deepRun(s, i+n0, dL|dM)
		}
	}
	if f0&(dL|dM) != 0 {
		return deepRun(s, i, dL|dM)
	}
	// ' ?[\p{P}\p{S}]+[\r\n]*'
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		if f1, _ := deepAt(s, i+1); f1&dPS != 0 {
			j = i + 1
		}
	}
	if f, _ := deepAt(s, j); f&dPS != 0 {
		j = deepRun(s, j, dPS)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	if f0&dSp == 0 {
		return -1
	}
	// White space, as in the GPT-4 pattern.
	end, lastNL, lastStart := i, -1, i
	for end < len(s) {
		f, n := deepAt(s, end)
		if f&dSp == 0 {
			break
		}
		if f&dNL != 0 {
			lastNL = end + n
		}
		lastStart = end
		end += n
	}
	if lastNL >= 0 {
		return lastNL
	}
	if end == len(s) || lastStart == i {
		return end
	}
	return lastStart
}
