package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
)

// AppendStringHTML writes what encoding/json writes; AppendString differs
// only in leaving <, >, &, U+2028 and U+2029 alone; both decode back to s
// (with invalid UTF-8 as U+FFFD).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "<|end|> & \"q\"\n\t\x01", "\u2028\u2029", "bad \xff utf8", "héllo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendStringHTML(nil, s); string(got) != string(want) {
			t.Fatalf("AppendStringHTML(%q) = %s, encoding/json %s", s, got, want)
		}
		plain := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(plain, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: %v", s, plain, err)
		}
		if back != strings.ToValidUTF8(s, "\ufffd") && back != string([]rune(s)) {
			t.Fatalf("AppendString(%q) decodes to %q", s, back)
		}
		if strings.ContainsAny(string(plain), "\u2028\u2029") != strings.ContainsAny(s, "\u2028\u2029") {
			t.Fatalf("AppendString(%q) = %s: U+2028/U+2029 escaped", s, plain)
		}
	})
}
