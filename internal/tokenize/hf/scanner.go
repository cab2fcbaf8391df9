package hf

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written matchers for the split regexes of the most used tokenizers.
// They give exactly the matches regexp2 gives for the same pattern (checked
// by TestScannerMatchesRegex and FuzzScanner) at a fraction of the cost.

// gpt4Patterns maps the Split regexes of GPT-4-style tokenizers to the
// longest digit run one match may hold: Llama 3 and many others use
// \p{N}{1,3}, Qwen2 and Qwen3 \p{N}.
var gpt4Patterns = map[string]int{
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: 3,
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:      1,
}

// knownScanners maps other Split regexes to their hand-written matchers.
var knownScanners = map[string]pattern{
	o200kPattern:   o200kScanner{},
	deepseekDigits: numberRuns{max: 3},
	deepseekCJK:    runeRuns(isDeepseekCJK),
	deepseekMain:   deepseekScanner{},
}

// Character classes, after refRune.
const (
	clsOther = iota
	clsLetter
	clsNumber
	clsSpace // \s but not \r or \n
	clsNewline
)

var asciiClass [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		asciiClass[c] = runeClassSlow(rune(c))
	}
}

func runeClassSlow(c rune) uint8 {
	switch {
	case c == '\r' || c == '\n':
		return clsNewline
	case c == '\t' || c == '\v' || c == '\f' || c == ' ' || c == 0x85 || unicode.Is(unicode.Z, c):
		return clsSpace
	case unicode.IsLetter(c):
		return clsLetter
	case unicode.IsNumber(c):
		return clsNumber
	default:
		return clsOther
	}
}

// classAt returns the class and byte length of the character at s[i:].
func classAt(s string, i int) (cls uint8, size int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return runeClassSlow(refRune(r)), size
}

// gpt4Scanner matches
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,k}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
type gpt4Scanner struct{ maxDigits int }

func (g gpt4Scanner) findAll(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		end := g.matchAt(s, i)
		dst = append(dst, [2]int{i, end})
		i = end
	}
	return dst
}

// contractionAt returns the end of 's, 't, 're, 've, 'm, 'll or 'd
// (case-insensitive, Oniguruma folding) at s[i:], or -1.
func contractionAt(s string, i int) int {
	if s[i] != '\'' || i+1 >= len(s) {
		return -1
	}
	j := i + 1
	if j+1 < len(s) && s[j] == 0xC5 && s[j+1] == 0xBF { // U+017F folds to s
		return j + 2
	}
	lower := func(k int) byte {
		if k >= len(s) {
			return 0
		}
		c := s[k]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		return c
	}
	switch lower(j) {
	case 's', 't', 'm', 'd':
		return j + 1
	case 'r', 'v':
		if lower(j+1) == 'e' {
			return j + 2
		}
	case 'l':
		if lower(j+1) == 'l' {
			return j + 2
		}
	}
	return -1
}

// letterRunEnd returns the end of the run of letters starting at i.
func letterRunEnd(s string, i int) int {
	for i < len(s) {
		cls, size := classAt(s, i)
		if cls != clsLetter {
			break
		}
		i += size
	}
	return i
}

func (g gpt4Scanner) matchAt(s string, i int) int {
	if e := contractionAt(s, i); e >= 0 {
		return e
	}
	c0, n0 := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0 == clsLetter {
		return letterRunEnd(s, i+n0)
	}
	if c0 != clsNewline && c0 != clsNumber && i+n0 < len(s) {
		if c1, n1 := classAt(s, i+n0); c1 == clsLetter {
			return letterRunEnd(s, i+n0+n1)
		}
	}
	// \p{N}{1,k}
	if c0 == clsNumber {
		j := i + n0
		for k := 1; k < g.maxDigits && j < len(s); k++ {
			c, n := classAt(s, j)
			if c != clsNumber {
				break
			}
			j += n
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		if c1, _ := classAt(s, i+1); c1 == clsOther {
			j = i + 1
		}
	}
	if c, _ := classAt(s, j); c == clsOther {
		for j < len(s) {
			c, n := classAt(s, j)
			if c != clsOther {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// Whitespace: \s*[\r\n]+ | \s+(?!\S) | \s+
	end, lastNL, lastStart := i, -1, i
	for end < len(s) {
		c, n := classAt(s, end)
		if c != clsSpace && c != clsNewline {
			break
		}
		if c == clsNewline {
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
