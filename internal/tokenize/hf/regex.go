package hf

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// pattern finds the non-overlapping matches of a Split or Replace pattern, as
// byte ranges of the input, the way the Rust library's Pattern trait does.
type pattern interface {
	// findAll returns the [start, end) byte ranges of the non-empty matches
	// in s, left to right, appended to dst.
	findAll(s string, dst [][2]int) [][2]int
}

// literal matches a fixed string (the {"String": ...} form).
type literal string

func (l literal) findAll(s string, dst [][2]int) [][2]int {
	if l == "" {
		return dst
	}
	off := 0
	for {
		i := strings.Index(s[off:], string(l))
		if i < 0 {
			return dst
		}
		dst = append(dst, [2]int{off + i, off + i + len(l)})
		off += i + len(l)
	}
}

// regex matches an Oniguruma-style regular expression (the {"Regex": ...}
// form). The Rust library uses Oniguruma; regexp2 implements the same
// backtracking dialect, lookahead included.
type regex struct {
	src string
	re  *regexp2.Regexp
}

func compileRegex(src string) (*regex, error) {
	re, err := regexp2.Compile(expandCaseInsensitive(src), regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("compile regex %q: %w", src, err)
	}
	return &regex{src: src, re: re}, nil
}

func (r *regex) findAll(s string, dst [][2]int) [][2]int {
	if s == "" {
		return dst
	}
	runes := make([]rune, 0, len(s))
	// offs[i] is the byte offset of rune i; offs[len(runes)] == len(s).
	offs := make([]int, 0, len(s)+1)
	for i, c := range s {
		runes = append(runes, refRune(c))
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	pos := 0
	for pos <= len(runes) {
		m, err := r.re.FindRunesMatchStartingAt(runes, pos)
		if err != nil || m == nil {
			break
		}
		start, end := m.Index, m.Index+m.Length
		if end == start {
			// An empty match: move on by one character, as Oniguruma's
			// iterator does; empty splits are dropped anyway.
			pos = end + 1
			continue
		}
		dst = append(dst, [2]int{offs[start], offs[end]})
		pos = end
	}
	return dst
}

// expandCaseInsensitive rewrites case-insensitive groups made only of ASCII
// letters, quotes and alternation, such as (?i:'s|'t|'re|'ve|'m|'ll|'d), into
// explicit classes with Oniguruma's Unicode case folding: besides the other
// ASCII case, s also matches U+017F (ſ) and k matches U+212A (Kelvin sign),
// which regexp2's case-insensitive mode does not do.
func expandCaseInsensitive(src string) string {
	const open = "(?i:"
	var b strings.Builder
	for {
		i := strings.Index(src, open)
		if i < 0 {
			b.WriteString(src)
			return b.String()
		}
		j := strings.IndexByte(src[i:], ')')
		if j < 0 {
			b.WriteString(src)
			return b.String()
		}
		body := src[i+len(open) : i+j]
		if !simpleCaseGroup(body) {
			b.WriteString(src[:i+j+1])
			src = src[i+j+1:]
			continue
		}
		b.WriteString(src[:i])
		b.WriteString("(?:")
		for _, c := range body {
			lo := unicode.ToLower(c)
			switch {
			case lo == 's':
				b.WriteString("[sS\u017F]")
			case lo == 'k':
				b.WriteString("[kK\u212A]")
			case lo >= 'a' && lo <= 'z':
				b.WriteString("[" + string(lo) + string(unicode.ToUpper(lo)) + "]")
			default:
				b.WriteRune(c)
			}
		}
		b.WriteString(")")
		src = src[i+j+1:]
	}
}

// simpleCaseGroup reports whether a (?i:...) body has only ASCII letters,
// apostrophes and alternation.
func simpleCaseGroup(body string) bool {
	if body == "" {
		return false
	}
	for _, c := range body {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '\'' || c == '|') {
			return false
		}
	}
	return true
}

// standIn is a code point unassigned in every Unicode version.
const standIn = 0x0378

// refRune returns c, or standIn when the reference library's regex engine
// treats c as unassigned: Go's Unicode tables are newer than Oniguruma's, and
// a character added since must match the same classes (none) as there.
func refRune(c rune) rune {
	if c < standIn {
		return c
	}
	lo, hi := 0, len(onigUnassigned)
	for lo < hi {
		m := (lo + hi) / 2
		switch r := onigUnassigned[m]; {
		case c < r[0]:
			hi = m
		case c > r[1]:
			lo = m + 1
		default:
			return standIn
		}
	}
	return c
}

// validUTF8 reports whether s is valid UTF-8.
func validUTF8(s string) bool { return utf8.ValidString(s) }
