package hf

import (
	"unicode"
	"unicode/utf8"
)

// charPattern matches every single character for which its function is true,
// each as its own match (the Rust library's Pattern for Fn(char) -> bool).
type charPattern func(rune) bool

func (f charPattern) findAll(s string, dst [][2]int) [][2]int {
	for i, c := range s {
		if f(c) {
			dst = append(dst, [2]int{i, i + utf8.RuneLen(c)})
		}
	}
	return dst
}

// isNumeric is Rust's char::is_numeric: general category N.
func isNumeric(c rune) bool { return unicode.IsNumber(c) }

// isPunc is the Punctuation pre-tokenizer's test: ASCII punctuation
// (symbols such as $ + < = > ^ ` | ~ included) or general category P.
func isPunc(c rune) bool {
	if c < utf8.RuneSelf {
		return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
	}
	return unicode.IsPunct(c)
}

// wordRuns matches \w+|[^\w\s]+ with the Rust regex crate's Unicode classes:
// runs of word characters and runs of other non-space characters.
type wordRuns struct{}

func (wordRuns) findAll(s string, dst [][2]int) [][2]int {
	const (
		none = iota
		word
		other
	)
	kind := func(c rune) int {
		switch {
		case isWordChar(c):
			return word
		case unicode.IsSpace(c):
			return none
		default:
			return other
		}
	}
	start, cur := 0, none
	for i, c := range s {
		k := kind(c)
		if k == cur {
			continue
		}
		if cur != none {
			dst = append(dst, [2]int{start, i})
		}
		start, cur = i, k
	}
	if cur != none {
		dst = append(dst, [2]int{start, len(s)})
	}
	return dst
}
