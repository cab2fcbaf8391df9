// Package jsonenc appends JSON strings to a byte slice without reflection,
// for the hand-written encoders on hot paths (the simulator's responses, the
// decision log).
package jsonenc

import "unicode/utf8"

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string the way serde_json (pydantic, so
// vLLM) writes it: quotes, backslashes and control characters escaped,
// everything else (non-ASCII included) verbatim; invalid UTF-8 becomes
// U+FFFD.
func AppendString(b []byte, s string) []byte { return appendString(b, s, false) }

// AppendStringHTML appends s as encoding/json writes it: as AppendString,
// and <, >, &, U+2028 and U+2029 escaped too.
func AppendStringHTML(b []byte, s string) []byte { return appendString(b, s, true) }

func appendString(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		if html && (r == '\u2028' || r == '\u2029') {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
