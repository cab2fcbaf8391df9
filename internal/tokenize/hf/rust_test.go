//go:build tokenizers_rust

package hf

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRustParity compares the pure-Go tokenizer with the Rust library, on
// the golden texts of every family, where libtokenizers.a is linked
// (go test -tags tokenizers_rust, see docs/tokenizers.md).
func TestRustParity(t *testing.T) {
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			goTok := loadFamily(t, fam)
			rs, err := LoadRust(fixtureDir(t, fam))
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			for i, g := range readGoldens(t, fam) {
				want, err := rs.Encode(g.Text, g.AddSpecialTokens)
				if err != nil {
					t.Fatal(err)
				}
				got, err := goTok.Encode(g.Text, g.AddSpecialTokens)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("#%d Encode(%q) mismatch (-rust +go):\n%s", i, g.Text, diff)
				}
				wantText, _ := rs.Decode(want, false)
				gotText, _ := goTok.Decode(want, false)
				if wantText != gotText {
					t.Errorf("#%d Decode = %q, want %q", i, gotText, wantText)
				}
			}
		})
	}
}
