package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/inferrail/inferrail/sidecar/engine/vllm"
)

// hostilePage is a real vLLM page with one family's series repeated with
// distinct labels until the page is about size bytes: a buggy exporter or
// a hostile engine port. family is either one of the page's (the table
// reads it) or a new one (the table does not).
func hostilePage(tb testing.TB, family string, size int) []byte {
	tb.Helper()
	base, err := os.ReadFile("vllm/testdata/v0.25.txt")
	if err != nil {
		tb.Fatal(err)
	}
	var extra bytes.Buffer
	for i := 0; len(base)+extra.Len() < size; i++ {
		fmt.Fprintf(&extra, "%s{engine=\"%d\",model_name=\"m\"} 1\n", family, 1000+i)
	}
	typ := []byte("# TYPE " + family + " gauge\n")
	if i := bytes.Index(base, typ); i >= 0 { // after the family's TYPE line
		i += len(typ)
		return bytes.Join([][]byte{base[:i], extra.Bytes(), base[i:]}, nil)
	}
	return bytes.Join([][]byte{base, typ, extra.Bytes()}, nil)
}

// benchParse parses page with the vLLM table; a page over the series bound
// is expected to be unreadable (wantUnreadable), any other error fails.
func benchParse(b *testing.B, page []byte, wantUnreadable bool) {
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		_, err := engine.ParseLoad(bytes.NewReader(page), 8<<20, vllm.Names)
		if err != nil && !(wantUnreadable && errors.Is(err, engine.ErrUnreadable)) {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseLoadRealPage parses the v0.25 fixture page.
func BenchmarkParseLoadRealPage(b *testing.B) {
	page, err := os.ReadFile("vllm/testdata/v0.25.txt")
	if err != nil {
		b.Fatal(err)
	}
	benchParse(b, page, false)
}

// BenchmarkParseLoadRepeatedUnusedFamily parses a 4 MiB page whose bulk is
// one family the table does not read.
func BenchmarkParseLoadRepeatedUnusedFamily(b *testing.B) {
	benchParse(b, hostilePage(b, "vllm:unused_gauge", 4<<20), false)
}

// BenchmarkParseLoadRepeatedUsedFamily parses a 4 MiB page whose bulk is
// series of a family the table reads (waiting requests): more than
// MaxSeriesPerFamily, so the page is unreadable.
func BenchmarkParseLoadRepeatedUsedFamily(b *testing.B) {
	benchParse(b, hostilePage(b, "vllm:num_requests_waiting", 4<<20), true)
}
