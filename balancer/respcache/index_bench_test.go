package respcache

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkIndexSearch is one exact cosine search over n vectors of dims
// in one partition (the worst case: every vector in the tenant and model
// of the question), to find where an approximate index would be needed.
func BenchmarkIndexSearch(b *testing.B) {
	for _, dims := range []int{256, 1024} {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("dims=%d/n=%d", dims, n), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(n)))
				x := newIndex(dims, n, newMetrics(nil))
				exp := time.Now().Add(time.Hour)
				rand := func() []float32 {
					v := make([]float32, dims)
					for i := range v {
						v[i] = float32(rng.NormFloat64())
					}
					_ = normalizeVector(v)
					return v
				}
				for i := range n {
					if err := x.Add(&Vector{ID: fmt.Sprint(i), Partition: "p", Expires: exp, V: rand()}, "bench"); err != nil {
						b.Fatal(err)
					}
				}
				q := rand()
				now := time.Now()
				b.ReportAllocs()
				for b.Loop() {
					if _, _, ok := x.Search("p", q, now); !ok {
						b.Fatal("nothing found")
					}
				}
			})
		}
	}
}
