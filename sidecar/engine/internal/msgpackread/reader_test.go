package msgpackread

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"testing/quick"

	"github.com/vmihailenco/msgpack/v5"
)

func enc(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every integer width and sign, and bytes of every length, normalise as in
// docs/engines.md#vllm-block-hashes-on-the-wire.
func TestHashNormalisation(t *testing.T) {
	f := func(v uint64, neg int64, raw []byte) bool {
		for _, tc := range []struct {
			in   any
			want uint64
		}{
			{v, v},
			{uint8(v), uint64(uint8(v))},
			{uint16(v), uint64(uint16(v))},
			{uint32(v), uint64(uint32(v))},
			{neg, uint64(neg)},
			{int8(neg), uint64(int64(int8(neg)))},
			{int16(neg), uint64(int64(int16(neg)))},
			{int32(neg), uint64(int64(int32(neg)))},
			{raw, lastEight(raw)},
		} {
			got, err := NewReader(enc(t, tc.in)).Hash()
			if err != nil || got != tc.want {
				t.Logf("Hash(%v) = %d, %v; want %d", tc.in, got, err, tc.want)
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}

func lastEight(b []byte) uint64 {
	var pad [8]byte
	if len(b) >= 8 {
		copy(pad[:], b[len(b)-8:])
	} else {
		copy(pad[8-len(b):], b)
	}
	return binary.BigEndian.Uint64(pad[:])
}

// vLLM's int conversion of a sha256 digest keeps its last 8 bytes.
func TestHashFromDigest(t *testing.T) {
	digest := []byte{0x01, 0xd0, 0x5b, 0x6f, 0x65, 0xe0, 0x18, 0x69, 0x49, 0x5b, 0x2f, 0xea, 0x10, 0xfc, 0x39, 0xfa,
		0xaf, 0x80, 0xfd, 0x65, 0x92, 0xbd, 0xa9, 0x30, 0xd2, 0x07, 0x99, 0xbf, 0x0f, 0x09, 0xa4, 0x0d}
	if got := HashFromBytes(digest); got != 15134234118671934477 {
		t.Errorf("HashFromBytes = %d", got)
	}
	if got := HashFromBytes([]byte{1, 2}); got != 0x0102 {
		t.Errorf("short = %#x", got)
	}
}

func randValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(10); {
	case k == 0 && depth < 4:
		a := make([]any, r.IntN(5))
		for i := range a {
			a[i] = randValue(r, depth+1)
		}
		return a
	case k == 1 && depth < 4:
		m := map[string]any{}
		for range r.IntN(4) {
			m[string(rune('a'+r.IntN(26)))] = randValue(r, depth+1)
		}
		return m
	case k == 2:
		return string(make([]byte, r.IntN(300)))
	case k == 3:
		return make([]byte, r.IntN(70000))
	case k == 4:
		return r.Float64()
	case k == 5:
		return -r.Int64()
	case k == 6:
		return nil
	case k == 7:
		return r.IntN(2) == 0
	case k == 8:
		return &msgpack.RawMessage{0xd6, 0x01, 1, 2, 3, 4}
	}
	return r.Uint64() >> r.IntN(64)
}

// Skip consumes exactly one value, like the library's recursive Skip.
func TestSkipMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		v := randValue(r, 0)
		b := append(enc(t, v), 0xc3) // a trailing true marks the end
		rd := NewReader(b)
		if err := rd.Skip(); err != nil {
			t.Fatalf("case %d: Skip: %v", i, err)
		}
		if rd.Remaining() != 1 {
			t.Fatalf("case %d: %d bytes left, want 1", i, rd.Remaining())
		}
		d := msgpack.NewDecoder(bytes.NewReader(b))
		if err := d.Skip(); err != nil {
			t.Fatalf("case %d: library Skip: %v", i, err)
		}
		if ok, err := d.DecodeBool(); err != nil || !ok {
			t.Fatalf("case %d: library disagrees", i)
		}
	}
}

func TestLengthsBeyondPayloadAreRejected(t *testing.T) {
	for _, b := range [][]byte{
		{0xdd, 0xff, 0xff, 0xff, 0xff},
		{0xdf, 0x00, 0x01, 0x00, 0x00, 0x01},
		{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
		{0xc6, 0x00, 0x00, 0x00, 0x09, 1, 2},
		{0xd9},
	} {
		rd := NewReader(b)
		if err := rd.Skip(); err == nil {
			t.Errorf("Skip(% x) succeeded", b)
		}
		rd.Reset(b)
		switch b[0] {
		case 0xdd:
			if _, err := rd.ArrayLen(); err == nil {
				t.Errorf("ArrayLen(% x) succeeded", b)
			}
		case 0xdf:
			if _, err := rd.MapLen(); err == nil {
				t.Errorf("MapLen(% x) succeeded", b)
			}
		default:
			if _, err := rd.String(); err == nil {
				t.Errorf("String(% x) succeeded", b)
			}
		}
	}
}
