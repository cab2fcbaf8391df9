package summary

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// frames splits b into messages, each prefixed by its length (2 bytes,
// big-endian); a short tail is the last message.
func frames(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 2 {
		n := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		n = min(n, len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// joinFrames is frames' inverse.
func joinFrames(msgs ...[]byte) []byte {
	var out []byte
	for _, m := range msgs {
		out = binary.BigEndian.AppendUint16(out, uint16(len(m)))
		out = append(out, m...)
	}
	return out
}

// FuzzViewSequence applies a sequence of snapshots and deltas, as a balancer
// receives them from one sidecar, to one view: every message is applied or
// refused with ErrMalformed, ErrStale or ErrGap; the version only moves
// forward; a refused message leaves the version as it was; the view answers
// queries at every step.
func FuzzViewSequence(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	s := randomSnapshot(r)
	d := randomDelta(r)
	d.Epoch, d.Seq = s.Epoch, s.Seq+1
	f.Add(joinFrames(s.Marshal(nil), d.Marshal(nil)))
	f.Add(joinFrames(d.Marshal(nil), s.Marshal(nil), d.Marshal(nil)))
	b, err := NewBuilder(DefaultConfig(), nil)
	if err != nil {
		f.Fatal(err)
	}
	snap := b.EncodeSnapshot()
	b.Add(kvblock.Hash(r.Uint64()), MediumGPU)
	deltas, _ := b.Flush()
	f.Add(joinFrames(append([][]byte{snap}, deltas...)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		var v View
		for _, m := range frames(in) {
			before := v.Info()
			err := v.Apply(m)
			after := v.Info()
			if err != nil {
				if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrStale) && !errors.Is(err, ErrGap) {
					t.Fatalf("Apply: unexpected error %v", err)
				}
				if after.Epoch != before.Epoch || after.Seq != before.Seq || after.Valid != before.Valid {
					t.Fatalf("a refused message moved the view from %+v to %+v", before, after)
				}
			} else if !after.Valid || after.Epoch < before.Epoch || after.Epoch == before.Epoch && after.Seq < before.Seq && before.Valid {
				t.Fatalf("an applied message moved the view back from %+v to %+v", before, after)
			}
			_ = v.LongestPrefix([]kvblock.Hash{1, 2, 3}, MediumGPU)
			_ = v.Contains(4, MediumCPU)
		}
	})
}
