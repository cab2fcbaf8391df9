package respcache

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestIndexMatchesBruteForce runs random adds, removes, purges and
// evictions on the index and checks every search against a plain scan of
// the vectors that should be left.
func TestIndexMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const dims = 8
	x := newIndex(dims, 40, newMetrics(nil))
	now := time.Unix(1000, 0)
	live := map[string]*Vector{} // what the index should hold
	var order []string           // insertion order, for max_entries
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		_ = normalizeVector(v)
		return v
	}
	drop := func(id string) {
		delete(live, id)
		for i, o := range order {
			if o == id {
				order = append(order[:i], order[i+1:]...)
				break
			}
		}
	}
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 6:
			id := fmt.Sprint(rng.IntN(80))
			v := &Vector{ID: id, Partition: fmt.Sprint("p", rng.IntN(3)), Scope: fmt.Sprint("s", rng.IntN(2)),
				Expires: now.Add(time.Duration(rng.IntN(100)) * time.Second), V: vec()}
			if err := x.Add(v, "test"); err != nil {
				t.Fatal(err)
			}
			drop(id)
			live[id] = v
			order = append(order, id)
			for len(order) > 40 {
				drop(order[0])
			}
		case op < 8:
			id := fmt.Sprint(rng.IntN(80))
			x.Remove(id, "")
			drop(id)
		case op < 9 && step%50 == 0:
			s := fmt.Sprint("s", rng.IntN(2))
			x.PurgeTags(Tag(s), "")
			for id, v := range live {
				if v.Scope == s {
					drop(id)
				}
			}
		default:
			q, part := vec(), fmt.Sprint("p", rng.IntN(3))
			at := now.Add(time.Duration(rng.IntN(100)) * time.Second)
			got, gd, gok := x.Search(part, q, at)
			var want *Vector
			var wd float32
			for _, v := range live {
				if v.Partition == part && at.Before(v.Expires) {
					if d := dot(q, v.V); want == nil || d > wd {
						want, wd = v, d
					}
				}
			}
			if gok != (want != nil) || (gok && got.ID != want.ID && float64(1-wd) != gd) {
				t.Fatalf("step %d: search got %v %v %v, want %v", step, got, gd, gok, want)
			}
		}
		if x.Len() != len(live) {
			t.Fatalf("step %d: index holds %d, want %d", step, x.Len(), len(live))
		}
	}
}
