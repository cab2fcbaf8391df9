package routebench

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// gpuIndex adapts a summary view to route.PrefixIndex: the adapter the fleet
// needs, one line.
type gpuIndex struct{ v *summary.View }

func (g gpuIndex) LongestPrefix(hs []kvblock.Hash) int {
	return g.v.LongestPrefix(hs, summary.MediumGPU)
}

var _ route.PrefixIndex = gpuIndex{}

// view returns a summary view of a replica holding filler random blocks and
// the given prefix.
func view(b *testing.B, r *rand.Rand, filler int, prefix []kvblock.Hash) *summary.View {
	bl, err := summary.NewBuilder(summary.DefaultConfig(), time.Now)
	if err != nil {
		b.Fatal(err)
	}
	for range filler {
		bl.Add(kvblock.Hash(r.Uint64()), summary.MediumGPU)
	}
	for _, h := range prefix {
		bl.Add(h, summary.MediumGPU)
	}
	v := summary.NewView()
	if err := v.Apply(bl.Snapshot()); err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkPickBloom measures a decision of the cache-aware policies over 8,
// 64 and 256 replicas whose summaries are real bloom filters holding 20,000
// blocks each; one replica in eight holds the first 64 of the prompt's 128
// blocks (a 2k-token prompt).
func BenchmarkPickBloom(b *testing.B) {
	seed := kvblock.NewSeed("m", "", "")
	tokens := make([]uint32, 128*16)
	for i := range tokens {
		tokens[i] = uint32(i * 7919)
	}
	hs := kvblock.Hashes(nil, seed, tokens, 16)
	r := rand.New(rand.NewPCG(1, 2))
	views := make([]*summary.View, 256)
	for i := range views {
		var prefix []kvblock.Hash
		if i%8 == 3 {
			prefix = hs[:64]
		}
		views[i] = view(b, r, 20000, prefix)
	}
	for _, name := range []string{route.PolicyPrefixHash, route.PolicyKVAware, route.PolicyCostModel} {
		for _, n := range []int{8, 64, 256} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				cfg := route.DefaultConfig()
				cfg.Policy = name
				p, err := route.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				cs := make([]route.Candidate, n)
				for i := range cs {
					cs[i] = route.Candidate{
						ID: fmt.Sprintf("replica-%d", i), Models: []string{"m"}, Healthy: true,
						Own: &route.Counters{}, Prefix: gpuIndex{views[i]},
						Load: route.Load{Known: true, Running: i % 13, Waiting: i % 3},
					}
				}
				route.Prepare(cs)
				s := route.NewScratch(n)
				req := &route.Request{Model: "m", Hashes: hs, BlockSize: 16, PromptTokens: len(tokens), Now: time.Now()}
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := p.Pick(req, cs, s); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
