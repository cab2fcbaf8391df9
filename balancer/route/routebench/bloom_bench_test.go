package routebench

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
)

// gpuIndex adapts a summary view to route.PrefixIndex: the adapter the fleet
// needs, one line.
type gpuIndex struct{ v *summary.View }

func (g gpuIndex) LongestPrefix(hs []kvblock.Hash) int {
	return g.v.LongestPrefix(hs, summary.MediumGPU)
}

var _ route.PrefixIndex = gpuIndex{}

// promptIndex is gpuIndex with the prepared-prompt path (route.PromptIndex),
// as the fleet's adapter has it.
type promptIndex struct{ gpuIndex }

func (g promptIndex) LongestPrefixOf(p route.PreparedPrompt) (int, bool) {
	sp, ok := p.(*summary.Prompt)
	if !ok {
		return 0, false
	}
	return g.v.LongestPrefixOf(sp, summary.MediumGPU), true
}

var _ route.PromptIndex = promptIndex{}

// view returns a summary view of a replica holding filler random blocks and
// the given prefix, its filter sized for the false-positive rate fpr.
func view(b *testing.B, r *rand.Rand, filler int, prefix []kvblock.Hash, fpr float64) *summary.View {
	cfg := summary.DefaultConfig()
	cfg.FalsePositiveRate = fpr
	bl, err := summary.NewBuilder(cfg, time.Now)
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
	if err := v.Apply(bl.EncodeSnapshot()); err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkPickBloom measures a decision of the cache-aware policies over 8,
// 64 and 256 replicas whose summaries are real bloom filters holding 20,000
// blocks each, for a 2k-token prompt (128 blocks). In fleet=cold one replica
// in eight holds the first 64 blocks and the others none; in fleet=warm every
// replica also holds the first 16 (a shared system prompt), so every walk is
// longer. path=hashes asks every summary with the raw hashes
// (LongestPrefix); path=prompt prepares a reused summary.Prompt once per
// decision (its Reset is inside the timed loop) and asks every summary with
// it (LongestPrefixOf), as the balancer does. fpr is the filters' designed
// false-positive rate: the default 0.1% (k = 10) and the former default 1%
// (k = 7), measured in one run.
func BenchmarkPickBloom(b *testing.B) {
	seed := kvblock.NewSeed("m", "", "")
	tokens := make([]uint32, 128*16)
	for i := range tokens {
		tokens[i] = uint32(i * 7919)
	}
	hs := kvblock.Hashes(nil, seed, tokens, 16)
	for _, fpr := range []float64{summary.DefaultConfig().FalsePositiveRate, 0.01} {
		for _, fleet := range []string{"cold", "warm"} {
			r := rand.New(rand.NewPCG(1, 2))
			views := make([]*summary.View, 256)
			for i := range views {
				var prefix []kvblock.Hash
				if fleet == "warm" {
					prefix = hs[:16]
				}
				if i%8 == 3 {
					prefix = hs[:64]
				}
				views[i] = view(b, r, 20000, prefix, fpr)
			}
			for _, name := range []string{route.PolicyPrefixHash, route.PolicyKVAware, route.PolicyCostModel} {
				for _, n := range []int{8, 64, 256} {
					for _, path := range []string{"hashes", "prompt"} {
						if name == route.PolicyPrefixHash && (path == "prompt" || fleet == "warm" || fpr != 0.01) {
							continue // prefix_hash reads no summary
						}
						b.Run(fmt.Sprintf("fpr=%g/fleet=%s/%s/n=%d/path=%s", fpr, fleet, name, n, path), func(b *testing.B) {
							pickBloom(b, name, n, path == "prompt", hs, len(tokens), views)
						})
					}
				}
			}
		}
	}
}

// pickBloom is one BenchmarkPickBloom case.
func pickBloom(b *testing.B, name string, n int, prepared bool, hs []kvblock.Hash, tokens int, views []*summary.View) {
	cfg := route.DefaultConfig()
	cfg.Policy = name
	p, err := route.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	cs := make([]route.Candidate, n)
	for i := range cs {
		var idx route.PrefixIndex = gpuIndex{views[i]}
		if prepared {
			idx = promptIndex{gpuIndex{views[i]}}
		}
		cs[i] = route.Candidate{
			ID: fmt.Sprintf("replica-%d", i), Models: []string{"m"}, Healthy: true,
			Own: &route.Counters{}, Prefix: idx,
			Load: route.Load{Known: true, Report: load.Report{Running: int64(i % 13), Waiting: int64(i % 3)}},
		}
	}
	route.Prepare(cs)
	s := route.NewScratch(n)
	req := &route.Request{Model: "m", Hashes: hs, BlockSize: 16, PromptTokens: tokens, Now: time.Now()}
	var pp summary.Prompt // reused, as the balancer's pooled scratch does
	b.ReportAllocs()
	for b.Loop() {
		if prepared {
			pp.Reset(hs, summary.DefaultHashFuncs)
			req.Prompt = &pp
		}
		if _, _, err := p.Pick(req, cs, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPromptReset measures preparing a 2k-token prompt (128 blocks)
// for the summaries, once per request: the fixed cost of path=prompt above.
func BenchmarkPromptReset(b *testing.B) {
	seed := kvblock.NewSeed("m", "", "")
	tokens := make([]uint32, 128*16)
	for i := range tokens {
		tokens[i] = uint32(i * 7919)
	}
	hs := kvblock.Hashes(nil, seed, tokens, 16)
	var p summary.Prompt
	b.ReportAllocs()
	for b.Loop() {
		p.Reset(hs, summary.DefaultHashFuncs)
	}
}
