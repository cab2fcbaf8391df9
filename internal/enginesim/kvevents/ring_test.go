package kvevents

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRingMatchesModel checks the ring against a plain slice that keeps the
// last capacity entries, over random adds, resets and queries.
func TestRingMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 200 {
		capacity := rng.IntN(6)
		r := newRing(capacity)
		var model []entry
		seq := uint64(0)
		for op := range 60 {
			switch k := rng.IntN(10); {
			case k < 6:
				e := entry{seq: seq, payload: []byte{byte(seq)}}
				seq++
				r.add(e)
				model = append(model, e)
				if len(model) > capacity {
					model = model[len(model)-capacity:]
				}
			case k < 7:
				r.reset()
				model, seq = nil, 0
			default:
				from := uint64(rng.IntN(int(seq) + 2))
				var want []entry
				for _, e := range model {
					if e.seq >= from {
						want = append(want, e)
					}
				}
				got := r.since(from)
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(entry{})); diff != "" {
					t.Fatalf("iteration %d op %d: since(%d) with capacity %d mismatch (-want +got):\n%s", iter, op, from, capacity, diff)
				}
			}
		}
	}
}

func TestStartSeq(t *testing.T) {
	tests := []struct {
		in   []byte
		want uint64
	}{
		{nil, 0},
		{[]byte{5}, 5},
		{[]byte{0, 0, 0, 0, 0, 0, 1, 0}, 256},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, math.MaxUint64},
		{[]byte{0, 0, 0, 0, 0, 0, 0, 0, 7}, 7}, // leading zeros beyond 8 bytes
		{[]byte{1, 0, 0, 0, 0, 0, 0, 0, 0}, math.MaxUint64},
	}
	for _, tt := range tests {
		if got := startSeq(tt.in); got != tt.want {
			t.Errorf("startSeq(%x) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
