package tokenize

import "testing"

// BenchmarkDecodeJSON decodes the body of an 8k-token chat request into
// ordered template values.
func BenchmarkDecodeJSON(b *testing.B) {
	body := chatBody(8000, 500, "n")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := decodeJSON(body); err != nil {
			b.Fatal(err)
		}
	}
}
