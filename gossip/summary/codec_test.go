package summary

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/kvblock"
)

func randomSnapshot(r *rand.Rand) *Snapshot {
	s := &Snapshot{Epoch: r.Uint64(), Seq: r.Uint64N(1 << 20)}
	for m := range MaxMedia {
		if r.IntN(2) == 0 {
			continue
		}
		bits := 1 + r.Uint64N(2000)
		f := Filter{Medium: Medium(m), Count: r.Uint64N(1000), M: bits, K: uint8(1 + r.IntN(MaxHashFuncs)),
			Words: make([]uint64, (bits+63)/64)}
		for i := range f.Words {
			f.Words[i] = r.Uint64()
		}
		for range r.IntN(3) * r.IntN(50) {
			f.Gone = append(f.Gone, Key(r.Uint32()))
		}
		s.Filters = append(s.Filters, f)
	}
	return s
}

func randomDelta(r *rand.Rand) *Delta {
	d := &Delta{Epoch: r.Uint64(), Seq: r.Uint64(), Oldest: r.Int64()}
	for range r.IntN(300) {
		d.Changes = append(d.Changes, Change{Medium: Medium(r.IntN(MaxMedia)), Key: Key(r.Uint32()), Removed: r.IntN(3) == 0})
	}
	return d
}

func TestSnapshotRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		want := randomSnapshot(r)
		got, err := UnmarshalSnapshot(want.Marshal(nil))
		if err != nil {
			t.Fatalf("case %d: UnmarshalSnapshot: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: round trip mismatch (-want +got):\n%s", i, diff)
		}
	}
}

func TestDeltaRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		want := randomDelta(r)
		b := want.Marshal(nil)
		got, err := UnmarshalDelta(b)
		if err != nil {
			t.Fatalf("case %d: UnmarshalDelta: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: round trip mismatch (-want +got):\n%s", i, diff)
		}
		if len(want.Changes) > 0 && allOneRun(want.Changes) {
			if n := DeltaSize(want.Epoch, want.Seq, want.Oldest, len(want.Changes)); n != len(b) {
				t.Fatalf("case %d: DeltaSize = %d, encoded %d bytes", i, n, len(b))
			}
		}
	}
}

func allOneRun(cs []Change) bool {
	for _, c := range cs {
		if c.Medium != cs[0].Medium || c.Removed != cs[0].Removed {
			return false
		}
	}
	return true
}

func TestUnmarshalRejects(t *testing.T) {
	good := (&Snapshot{Epoch: 1, Seq: 2, Filters: []Filter{{Medium: 0, Count: 1, M: 64, K: 3, Words: []uint64{7}}}}).Marshal(nil)
	goodDelta := (&Delta{Epoch: 1, Seq: 2, Changes: []Change{{Key: 9}}}).Marshal(nil)
	tests := []struct {
		name  string
		b     []byte
		delta bool
	}{
		{name: "empty", b: nil},
		{name: "one byte", b: []byte{TypeSnapshot}},
		{name: "unknown type", b: []byte{0x7f, WireVersion}},
		{name: "future version", b: []byte{TypeSnapshot, 9, 0, 0, 0}},
		{name: "delta as snapshot", b: goodDelta},
		{name: "snapshot as delta", b: good, delta: true},
		{name: "truncated words", b: good[:len(good)-1]},
		{name: "trailing byte", b: append(bytes.Clone(good), 0)},
		{name: "too many filters", b: []byte{TypeSnapshot, WireVersion, 1, 1, MaxMedia + 1}},
		{name: "bad medium", b: []byte{TypeSnapshot, WireVersion, 1, 1, 1, MaxMedia, 0, 64, 3}},
		{name: "zero bits", b: []byte{TypeSnapshot, WireVersion, 1, 1, 1, 0, 0, 0, 3}},
		{name: "zero k", b: []byte{TypeSnapshot, WireVersion, 1, 1, 1, 0, 0, 64, 0}},
		{name: "repeated medium", b: []byte{TypeSnapshot, WireVersion, 1, 1, 2, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{name: "gone keys past the end", b: []byte{TypeSnapshot, WireVersion, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 2, 3, 4}},
		{name: "delta removal bad medium", b: []byte{TypeDelta, WireVersion, 1, 1, 0, 0x80 | MaxMedia, 1, 0, 0, 0, 0}, delta: true},
		{name: "huge filter", b: []byte{TypeSnapshot, WireVersion, 1, 1, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 3}},
		{name: "delta truncated hash", b: goodDelta[:len(goodDelta)-1], delta: true},
		{name: "delta empty run", b: []byte{TypeDelta, WireVersion, 1, 1, 0, 0, 0}, delta: true},
		{name: "delta bad medium", b: []byte{TypeDelta, WireVersion, 1, 1, 0, 9, 1, 0, 0, 0, 0}, delta: true},
		{name: "delta bad varint", b: []byte{TypeDelta, WireVersion, 0xff}, delta: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.delta {
				_, err = UnmarshalDelta(tc.b)
			} else {
				_, err = UnmarshalSnapshot(tc.b)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func FuzzUnmarshal(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	f.Add(randomSnapshot(r).Marshal(nil))
	f.Add(randomDelta(r).Marshal(nil))
	f.Add([]byte{TypeDelta, WireVersion, 1, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := UnmarshalSnapshot(b); err == nil {
			again, err := UnmarshalSnapshot(s.Marshal(nil))
			if err != nil {
				t.Fatalf("re-decoding a decoded snapshot: %v", err)
			}
			if diff := cmp.Diff(s, again); diff != "" {
				t.Fatalf("snapshot re-encoding changed it:\n%s", diff)
			}
		}
		if d, err := UnmarshalDelta(b); err == nil {
			again, err := UnmarshalDelta(d.Marshal(nil))
			if err != nil {
				t.Fatalf("re-decoding a decoded delta: %v", err)
			}
			if diff := cmp.Diff(d, again); diff != "" {
				t.Fatalf("delta re-encoding changed it:\n%s", diff)
			}
		}
		if typ, e, s, err := Peek(b); err == nil {
			if typ == TypeDelta {
				if d, err := UnmarshalDelta(b); err == nil && (d.Epoch != e || d.Seq != s) {
					t.Fatalf("Peek = (%d,%d), decoded (%d,%d)", e, s, d.Epoch, d.Seq)
				}
			}
		}
		_, _ = PeekOldest(b)
		var v View
		_ = v.Apply(b)
		_ = v.LongestPrefix([]kvblock.Hash{1, 2, 3}, MediumGPU)
	})
}

func TestPeek(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 100 {
		d := randomDelta(r)
		typ, e, s, err := Peek(d.Marshal(nil))
		if err != nil || typ != TypeDelta || e != d.Epoch || s != d.Seq {
			t.Fatalf("Peek(delta) = %d %d %d %v, want %d %d", typ, e, s, err, d.Epoch, d.Seq)
		}
		if o, err := PeekOldest(d.Marshal(nil)); err != nil || o != d.Oldest {
			t.Fatalf("PeekOldest = %d %v, want %d", o, err, d.Oldest)
		}
		sn := randomSnapshot(r)
		typ, e, s, err = Peek(sn.Marshal(nil))
		if err != nil || typ != TypeSnapshot || e != sn.Epoch || s != sn.Seq {
			t.Fatalf("Peek(snapshot) = %d %d %d %v", typ, e, s, err)
		}
	}
	if _, err := PeekOldest(randomSnapshot(r).Marshal(nil)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("PeekOldest(snapshot) err = %v", err)
	}
	if _, _, _, err := Peek([]byte{TypeDelta, WireVersion, 0x80}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Peek(truncated) err = %v", err)
	}
}
