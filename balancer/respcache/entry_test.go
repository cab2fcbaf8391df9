package respcache

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEntryRoundTrip(t *testing.T) {
	e := &Entry{Model: "m", Scope: "key:a", Status: 200, ContentType: "text/event-stream", Stream: true,
		Body: []byte("data: {}\n\ndata: [DONE]\n\n"), Created: time.UnixMilli(1_700_000_000_123)}
	got, err := UnmarshalEntry(MarshalEntry(e))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	b := MarshalEntry(e)
	for i := range b { // every truncation is an error, never a panic
		if _, err := UnmarshalEntry(b[:i]); err == nil {
			t.Fatalf("truncated at %d: no error", i)
		}
	}
}

func TestVectorRoundTrip(t *testing.T) {
	v := &Vector{ID: "id", Partition: "p", Model: "m", Scope: "s", Expires: time.UnixMilli(42), V: []float32{0.6, -0.8}}
	got, err := UnmarshalVector(MarshalVector(v))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := UnmarshalVector(MarshalEntry(&Entry{Status: 200})); err == nil {
		t.Error("an entry record decoded as a vector")
	}
}

func TestParseEmbeddingResponse(t *testing.T) {
	v, err := ParseEmbeddingResponse([]byte(`{"data":[{"embedding":[0.5,-1,2e-1]}]}`))
	if err != nil || len(v) != 3 || v[1] != -1 {
		t.Errorf("floats: %v %v", v, err)
	}
	// base64 of float32 LE 1.0, 0.0
	v, err = ParseEmbeddingResponse([]byte(`{"data":[{"embedding":"AACAPwAAAAA="}]}`))
	if err != nil || len(v) != 2 || v[0] != 1 {
		t.Errorf("base64: %v %v", v, err)
	}
	for _, bad := range []string{`{}`, `{"data":[]}`, `{"data":[{"embedding":[]}]}`, `{"data":[{"embedding":"AAA"}]}`, `{"data":[{"embedding":[1e99]}]}`, `x`} {
		if _, err := ParseEmbeddingResponse([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestDimensionError(t *testing.T) {
	x := newIndex(4, 10, newMetrics(nil))
	err := x.Add(&Vector{ID: "a", V: []float32{1, 0, 0}}, "first")
	var de *DimensionError
	if !errors.As(err, &de) || de.Got != 3 || de.Want != 4 {
		t.Fatalf("Add of a 3-vector to a 4-index: %v", err)
	}
	y := newIndex(0, 10, newMetrics(nil))
	if err := y.check(3, "the first embedding"); err != nil {
		t.Fatal(err)
	}
	if err := y.check(5, "the first embedding"); !errors.As(err, &de) || de.Source != "the first embedding" {
		t.Errorf("second size: %v", err)
	}
}

func FuzzUnmarshalEntry(f *testing.F) {
	f.Add(MarshalEntry(&Entry{Model: "m", Status: 200, Body: []byte("{}")}))
	f.Add([]byte{1, 1, 200, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := UnmarshalEntry(b)
		if err != nil {
			return
		}
		again, err := UnmarshalEntry(MarshalEntry(e))
		if err != nil || again.Status != e.Status || string(again.Body) != string(e.Body) {
			t.Fatalf("re-encoding changed the entry: %v", err)
		}
	})
}

func FuzzUnmarshalVector(f *testing.F) {
	f.Add(MarshalVector(&Vector{ID: "i", V: []float32{1, 2}}))
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := UnmarshalVector(b); err == nil && (len(v.V) == 0 || len(v.V) > maxDimensions) {
			t.Fatalf("accepted %d dimensions", len(v.V))
		}
	})
}

func FuzzParseEmbeddingResponse(f *testing.F) {
	f.Add([]byte(`{"data":[{"embedding":[0.5,-1]}]}`))
	f.Add([]byte(`{"data":[{"embedding":"AACAPwAAAAA="}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := ParseEmbeddingResponse(b); err == nil && len(v) == 0 {
			t.Fatal("accepted an empty embedding")
		}
	})
}
