package hf

import (
	"strings"
	"unicode/utf8"
)

// byteToRune is GPT-2's byte-to-unicode table: printable Latin-1 bytes map to
// themselves, the others to U+0100 and up, so every byte has a visible
// character. runeToByte is its inverse.
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
	// byteToStr caches the UTF-8 form of byteToRune.
	byteToStr [256]string
)

func init() {
	n := rune(0)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = 256 + n
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
		byteToStr[b] = string(byteToRune[b])
	}
}

// byteLevelEncode maps every byte of s to its byte-level character.
func byteLevelEncode(s string) string {
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		b.WriteString(byteToStr[s[i]])
	}
	return b.String()
}

// byteLevelDecode maps a token made of byte-level characters back to its
// bytes; a token with any other character is kept as its UTF-8 bytes, as the
// Rust decoder does.
func byteLevelDecode(tok string, dst []byte) []byte {
	start := len(dst)
	for _, c := range tok {
		b, ok := runeToByte[c]
		if !ok {
			return append(dst[:start], tok...)
		}
		dst = append(dst, b)
	}
	return dst
}

// lossyUTF8 converts b to a string, replacing each maximal invalid
// subsequence with U+FFFD, like Rust's String::from_utf8_lossy.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.WriteString(string(b[i : i+size]))
			i += size
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += invalidPrefixLen(b[i:])
	}
	return sb.String()
}

// invalidPrefixLen returns the length of the maximal prefix of b that could
// start a valid UTF-8 sequence but does not complete one (at least 1).
func invalidPrefixLen(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if k == 0 {
			if x < lo || x > hi {
				return n
			}
		} else if x < 0x80 || x > 0xBF {
			return n
		}
		n++
	}
	return n
}
