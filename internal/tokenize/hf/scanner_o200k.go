package hf

import (
	"unicode"
	"unicode/utf8"
)

// o200kPattern is the Split regex of OpenAI's o200k encoding (gpt-oss, GPT-4o):
// words are cut at case changes and keep a trailing contraction.
const o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Fine classes of the o200k scanner, as bits.
const (
	fUpper   = 1 << iota // in [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	fLower               // in [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	fLetter              // \p{L}
	fNumber              // \p{N}
	fSpace               // \s
	fNewline             // \r or \n
)

var asciiFine [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		asciiFine[c] = fineClassSlow(rune(c))
	}
}

func fineClassSlow(c rune) uint8 {
	var f uint8
	switch cls := runeClassSlow(c); cls {
	case clsNewline:
		f |= fNewline | fSpace
	case clsSpace:
		f |= fSpace
	case clsNumber:
		f |= fNumber
	case clsLetter:
		f |= fLetter
	}
	isM := unicode.IsMark(c)
	both := isM || unicode.Is(unicode.Lm, c) || unicode.Is(unicode.Lo, c)
	if both || unicode.Is(unicode.Lu, c) || unicode.Is(unicode.Lt, c) {
		f |= fUpper
	}
	if both || unicode.Is(unicode.Ll, c) {
		f |= fLower
	}
	return f
}

func fineAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiFine[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return fineClassSlow(refRune(r)), size
}

// o200kScanner matches o200kPattern.
type o200kScanner struct{}

func (o200kScanner) findAll(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		end := o200kMatchAt(s, i)
		dst = append(dst, [2]int{i, end})
		i = end
	}
	return dst
}

// withContraction extends a word match ending at end by an optional
// contraction.
func withContraction(s string, end int) int {
	if end < len(s) {
		if e := contractionAt(s, end); e >= 0 {
			return e
		}
	}
	return end
}

// o200kWord tries [Upper]*[Lower]+ (upperFirst false) or [Upper]+[Lower]*
// (upperFirst true) at j, with the backtracking the regex does, and returns
// the end or -1.
func o200kWord(s string, j int, upperFirst bool) int {
	// Maximal run of Upper characters, remembering where the last one that
	// is also Lower starts and ends.
	k := j
	lastBothEnd := -1
	for k < len(s) {
		f, n := fineAt(s, k)
		if f&fUpper == 0 {
			break
		}
		if f&fLower != 0 {
			lastBothEnd = k + n
		}
		k += n
	}
	lowerRun := func(p int) int {
		for p < len(s) {
			f, n := fineAt(s, p)
			if f&fLower == 0 {
				break
			}
			p += n
		}
		return p
	}
	if upperFirst {
		if k == j {
			return -1
		}
		return lowerRun(k)
	}
	// [Upper]* then [Lower]+: after the whole Upper run, or else giving back
	// Upper characters until one that is also Lower.
	if k < len(s) {
		if f, _ := fineAt(s, k); f&fLower != 0 {
			return lowerRun(k)
		}
	}
	if lastBothEnd >= 0 {
		// The last Upper-and-Lower character starts the Lower run, which
		// stops at the next Upper-only character (or the run's end).
		return lastBothEnd
	}
	return -1
}

func o200kMatchAt(s string, i int) int {
	f0, n0 := fineAt(s, i)
	prefixOK := f0&(fNewline|fLetter|fNumber) == 0
	// Alternatives 1 and 2, each first with the optional prefix character.
	for _, upperFirst := range []bool{false, true} {
		if prefixOK && i+n0 < len(s) {
			if e := o200kWord(s, i+n0, upperFirst); e >= 0 {
				return withContraction(s, e)
			}
		}
		if e := o200kWord(s, i, upperFirst); e >= 0 {
			return withContraction(s, e)
		}
	}
	// \p{N}{1,3}
	if f0&fNumber != 0 {
		j := i + n0
		for k := 1; k < 3 && j < len(s); k++ {
			f, n := fineAt(s, j)
			if f&fNumber == 0 {
				break
			}
			j += n
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
	const word = fSpace | fLetter | fNumber
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		if f1, _ := fineAt(s, i+1); f1&word == 0 {
			j = i + 1
		}
	}
	if f, _ := fineAt(s, j); f&word == 0 {
		for j < len(s) {
			f, n := fineAt(s, j)
			if f&word != 0 {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
			j++
		}
		return j
	}
	// White space, as in the GPT-4 pattern.
	end, lastNL, lastStart := i, -1, i
	for end < len(s) {
		f, n := fineAt(s, end)
		if f&fSpace == 0 {
			break
		}
		if f&fNewline != 0 {
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
