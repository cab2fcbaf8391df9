package openai

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decodeAll(t testing.TB, pieces [][]byte) []Event {
	t.Helper()
	d := NewDecoder(0)
	var evs []Event
	for _, p := range pieces {
		var err error
		evs, err = d.Feed(evs, p)
		if err != nil {
			t.Fatalf("Feed: %v", err)
		}
	}
	return evs
}

func TestDecoderCases(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"openai stream", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []Event{{Data: `{"a":1}`}, {Data: Done}}},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []Event{{Data: "x"}, {Data: "y"}}},
		{"cr only", "data: x\r\rdata: y\r\r", []Event{{Data: "x"}, {Data: "y"}}},
		{"multi-line data", "data: a\ndata: b\n\n", []Event{{Data: "a\nb"}}},
		{"no space after colon", "data:x\n\n", []Event{{Data: "x"}}},
		{"two spaces keep one", "data:  x\n\n", []Event{{Data: " x"}}},
		{"comment and event and id", ": keepalive\nevent: error\nid: 7\ndata: e\n\n", []Event{{Type: "error", Data: "e", ID: "7"}}},
		{"id persists", "id: 1\ndata: a\n\ndata: b\n\n", []Event{{Data: "a", ID: "1"}, {Data: "b", ID: "1"}}},
		{"no data no event", "event: x\n\n", nil},
		{"empty data line dispatches", "data\n\n", []Event{{Data: ""}}},
		{"bom", "\xEF\xBB\xBFdata: x\n\n", []Event{{Data: "x"}}},
		{"unterminated dropped", "data: x\n\ndata: y\n", []Event{{Data: "x"}}},
		{"unknown field ignored", "retry: 10\nfoo: bar\ndata: x\n\n", []Event{{Data: "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeAll(t, [][]byte{[]byte(tt.in)})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// randomStream builds a stream that exercises every line ending and field.
func randomStream(r *rand.Rand) []byte {
	var b bytes.Buffer
	if r.IntN(4) == 0 {
		b.Write(bom)
	}
	ends := []string{"\n", "\r\n", "\r"}
	n := r.IntN(8)
	for i := 0; i < n; i++ {
		end := ends[r.IntN(len(ends))]
		for j := r.IntN(3); j >= 0; j-- {
			switch r.IntN(5) {
			case 0:
				b.WriteString(": comment" + end)
			case 1:
				b.WriteString("event: e" + string(rune('a'+r.IntN(3))) + end)
			case 2:
				b.WriteString("id: " + string(rune('0'+r.IntN(9))) + end)
			default:
				b.WriteString("data: {\"k\":\"é漢" + strings.Repeat("x", r.IntN(5)) + "\"}" + end)
			}
		}
		b.WriteString(end)
	}
	return b.Bytes()
}

// TestDecoderAnySplit is the property test: any split of a stream into
// pieces gives the same events as the whole stream.
func TestDecoderAnySplit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 2000; iter++ {
		stream := randomStream(r)
		whole := decodeAll(t, [][]byte{stream})
		var pieces [][]byte
		rest := stream
		for len(rest) > 0 {
			n := 1 + r.IntN(len(rest))
			if r.IntN(2) == 0 {
				n = 1 + r.IntN(min(3, len(rest)))
			}
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		got := decodeAll(t, pieces)
		if diff := cmp.Diff(whole, got); diff != "" {
			t.Fatalf("iteration %d: split %q changed events (-whole +split):\n%s", iter, pieces, diff)
		}
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	datas := []string{`{"a":1}`, "two\nlines", "cr\r\nlf", Done}
	for _, d := range datas {
		if err := w.WriteData([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	rd := NewReader(&buf)
	var got []string
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Data)
	}
	want := []string{`{"a":1}`, "two\nlines", "cr\nlf", Done}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDecoderLineLimit(t *testing.T) {
	d := NewDecoder(8)
	if _, err := d.Feed(nil, []byte("data: 0123456789\n")); err != ErrLineTooLong {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add([]byte("data: x\r\n\r\ndata: [DONE]\n\n"), uint8(3))
	f.Add([]byte("\xEF\xBBdata\r"), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		whole := decodeAll(t, [][]byte{b})
		c := int(cut)
		if c > len(b) {
			c = len(b)
		}
		split := decodeAll(t, [][]byte{b[:c], b[c:]})
		if diff := cmp.Diff(whole, split); diff != "" {
			t.Fatalf("split at %d changed events:\n%s", c, diff)
		}
	})
}
