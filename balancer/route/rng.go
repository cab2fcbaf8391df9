package route

import "sync/atomic"

// rng is a seeded, lock-free generator safe for concurrent use: a splitmix64
// sequence over an atomic counter. Used from one goroutine it yields the same
// sequence for the same seed, which makes tests deterministic.
type rng struct{ state atomic.Uint64 }

func (r *rng) seed(s uint64) { r.state.Store(s) }

func (r *rng) next() uint64 { return mix64(r.state.Add(0x9e3779b97f4a7c15)) }

// intn returns a value in [0, n) for 0 < n < 2^32.
func (r *rng) intn(n int) int { return int((r.next() >> 32) * uint64(n) >> 32) }

// float returns a value in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// mix64 is the splitmix64 finalizer: a bijective, well-mixing 64-bit hash.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
