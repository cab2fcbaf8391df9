package route

import (
	"fmt"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// fixedIndex is a constant-time PrefixIndex holding a fixed prefix of every
// prompt, so that the benchmarks measure the policy, not the index (the
// routebench package measures real bloom summaries).
type fixedIndex int

func (f fixedIndex) LongestPrefix(hashes []kvblock.Hash) int { return min(int(f), len(hashes)) }

// benchFleet returns n fresh candidates with loads and summaries: one in
// eight holds the first 64 of the 128 blocks of the benchmark prompt.
func benchFleet(n int) []Candidate {
	cs := cands(n)
	for i := range cs {
		cs[i].Load.Running = int64(i % 13)
		cs[i].Load.Waiting = int64(i % 3)
		cs[i].Own.InFlight.Store(int64(i % 5))
		if i%8 == 3 {
			cs[i].Prefix = fixedIndex(64)
		} else {
			cs[i].Prefix = fixedIndex(0)
		}
	}
	return cs
}

// benchPicks times p's decision of r over cs, with one Scratch reused as on
// the request path.
func benchPicks(b *testing.B, p Policy, r *Request, cs []Candidate) {
	s := NewScratch(len(cs))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Pick(r, cs, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPick measures one decision per policy over 8, 64 and 256
// candidates with a 2k-token prompt (128 block hashes). Figures are in
// docs/benchmarks-route.md.
func BenchmarkPick(b *testing.B) {
	hs := prompt(1, 1, 64, 128)
	for _, name := range Policies {
		for _, n := range []int{8, 64, 256} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				p := newPolicy(b, name, nil)
				cs := benchFleet(n)
				benchPicks(b, p, req(hs), cs)
			})
		}
	}
}

// BenchmarkOverlay measures recording and looking up a 2k-token prompt.
func BenchmarkOverlay(b *testing.B) {
	o := NewOverlay(DefaultConfig().Overlay, 8)
	hs := prompt(1, 1, 64, 128)
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			o.record(hs, 42, t0, o.ttl)
		}
	})
	b.Run("lookup", func(b *testing.B) {
		buf := make([]overlayHit, 0, maxOverlayPoints+2)
		b.ReportAllocs()
		for b.Loop() {
			buf = o.lookup(hs, t0, buf[:0])
		}
	})
}

// BenchmarkBaselines measures one decision per peer baseline over 8, 64 and
// 256 candidates with a 2k-token prompt (128 block hashes); for
// sglang_cache_aware the prompt is already in its tree, so the decision
// walks and touches 128 blocks. Figures are in docs/benchmarks-route.md.
func BenchmarkBaselines(b *testing.B) {
	hs := prompt(1, 1, 64, 128)
	for _, name := range Baselines {
		for _, n := range []int{8, 64, 256} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				p := newPolicy(b, name, nil)
				cs := benchFleet(n)
				benchPicks(b, p, req(hs), cs)
			})
		}
	}
}

// BenchmarkStepClock measures the step clock's cost on the request path: the
// balancer takes Counters.mu once for every token a stream passes
// (StepEnded) besides a request's Sent and Prefilled, and a decision reads
// the clock without it (Step). All goroutines work on one replica's
// Counters, the contended case; "stream" is one 64-token stream's life
// (Sent, Prefilled, 63 later tokens, Done) with a decision's read per token.
// Figures are in docs/benchmarks-route.md.
func BenchmarkStepClock(b *testing.B) {
	at := time.Unix(1000, 0)
	// contended runs op on one Counters from 8 goroutines per CPU.
	contended := func(op func(c *Counters)) func(b *testing.B) {
		return func(b *testing.B) {
			var c Counters
			b.SetParallelism(8)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op(&c)
				}
			})
		}
	}
	b.Run("StepEnded", contended(func(c *Counters) { c.StepEnded(at) }))
	b.Run("Step", func(b *testing.B) {
		var c Counters
		c.StepEnded(at)
		var sink int64
		b.ReportAllocs()
		for b.Loop() {
			n, _ := c.Step()
			sink += n
		}
		_ = sink
	})
	b.Run("stream", contended(func(c *Counters) {
		c.InFlight.Add(1)
		c.Pending.Add(1)
		t := c.Sent(1000)
		c.Prefilled(1000, t, at)
		for range 63 {
			c.StepEnded(at)
			c.Step()
		}
		c.Done(1000, 0, t, true)
	}))
}

// BenchmarkTPOTGuard measures cost_model's decision for an 8,192-token
// prompt with the TPOT guard off and on, every candidate streaming answers
// (3 tokens, one seen) that the prompt's prefill would break: the guard
// then counts them on every candidate. Figures are in
// docs/benchmarks-route.md.
func BenchmarkTPOTGuard(b *testing.B) {
	hs := prompt(2, 2, 0, 512)
	for _, answers := range []int{0, 8, 64} {
		for _, n := range []int{8, 64} {
			b.Run(fmt.Sprintf("answers=%d/n=%d", answers, n), func(b *testing.B) {
				p := newPolicy(b, PolicyCostModel, func(c *Config) {
					if answers > 0 {
						c.SLO.TPOT = 100 * time.Millisecond
					}
				})
				cs := benchFleet(n)
				for i := range cs {
					for range answers {
						cs[i].Own.Follow(3, 0).Token(t0)
					}
				}
				benchPicks(b, p, req(hs), cs)
			})
		}
	}
}
