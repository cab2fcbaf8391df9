package fleet

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
)

// randomView returns a summary view holding filler random blocks and the
// first held blocks of hs, in a filter sized for capacity blocks at false
// positive rate fp (a small capacity and a high rate make false positives,
// and so geometric tails, common; a low rate needs more hash functions than
// summary.DefaultHashFuncs and exercises the prompt's slow path).
func randomView(t testing.TB, r *rand.Rand, capacity uint, fp float64, filler int, hs []kvblock.Hash, held int) *summary.View {
	t.Helper()
	cfg := summary.DefaultConfig()
	cfg.Capacity, cfg.FalsePositiveRate = capacity, fp
	bl, err := summary.NewBuilder(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for range filler {
		bl.Add(kvblock.Hash(r.Uint64()), summary.MediumGPU)
	}
	for _, h := range hs[:held] {
		bl.Add(h, summary.MediumGPU)
	}
	v := summary.NewView()
	if err := v.Apply(bl.EncodeSnapshot()); err != nil {
		t.Fatal(err)
	}
	return v
}

// randomPrompt returns the chained hashes of n blocks of random tokens.
func randomPrompt(r *rand.Rand, n int) []kvblock.Hash {
	ids := make([]uint32, n*16)
	for i := range ids {
		ids[i] = r.Uint32()
	}
	return kvblock.Hashes(nil, kvblock.NewSeed("m", "", ""), ids, 16)
}

var fpRates = []float64{0.3, 0.01, 0.0001}

// The prepared-prompt path answers exactly what LongestPrefix answers, for
// every cut of the prompt, on random summaries (false positives included).
func TestPromptPathMatchesHashes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var p summary.Prompt // reused, as the balancer does
	for iter := range 300 {
		hs := randomPrompt(r, r.IntN(200))
		held := 0
		if len(hs) > 0 {
			held = r.IntN(len(hs) + 1)
		}
		v := randomView(t, r, uint(64+r.IntN(512)), fpRates[iter%len(fpRates)], r.IntN(600), hs, held)
		g := (*gpuView)(v)
		p.Reset(hs, summary.DefaultHashFuncs)
		got, ok := g.LongestPrefixOf(&p)
		if !ok {
			t.Fatalf("iter %d: a *summary.Prompt was declined", iter)
		}
		if want := g.LongestPrefix(hs); got != want {
			t.Fatalf("iter %d: LongestPrefixOf = %d, LongestPrefix = %d (held %d of %d)", iter, got, want, held, len(hs))
		}
		if got < held {
			t.Fatalf("iter %d: LongestPrefixOf = %d < %d held blocks (a false negative)", iter, got, held)
		}
		cut := r.IntN(len(hs) + 1)
		if want := g.LongestPrefix(hs[:cut]); min(got, cut) != want {
			t.Fatalf("iter %d: min(LongestPrefixOf, %d) = %d, LongestPrefix(hs[:%d]) = %d", iter, cut, min(got, cut), cut, want)
		}
	}
}

type otherPrompt struct{}

func (otherPrompt) Len() int { return 0 }

// A preparation other than *summary.Prompt is declined, so route falls back
// to the hashes.
func TestPromptPathDeclinesOtherPreparations(t *testing.T) {
	g := (*gpuView)(summary.NewView())
	if _, ok := g.LongestPrefixOf(otherPrompt{}); ok {
		t.Error("LongestPrefixOf(otherPrompt) ok = true, want false")
	}
	if _, ok := g.LongestPrefixOf((*summary.Prompt)(nil)); ok {
		t.Error("LongestPrefixOf(nil *summary.Prompt) ok = true, want false")
	}
}

// Whole decisions agree: the cache-aware policies pick the same replica and
// predict the same cached tokens for every candidate with and without the
// prepared prompt, over random fleets of real summaries.
func TestPickSameWithPreparedPrompt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for _, name := range []string{route.PolicyKVAware, route.PolicyCostModel} {
		cfg := route.DefaultConfig()
		cfg.Policy = name
		cfg.Overlay.TTL = 0 // the overlay remembers picks; keep decisions independent
		// Two policies with the same seed draw the same tie-breaking keys.
		polRaw, err := route.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		polPrep, err := route.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for iter := range 40 {
			hs := randomPrompt(r, 1+r.IntN(100))
			n := 1 + r.IntN(12)
			cs := make([]route.Candidate, n)
			for i := range cs {
				v := randomView(t, r, uint(64+r.IntN(256)), fpRates[r.IntN(len(fpRates))], r.IntN(300), hs, r.IntN(len(hs)+1))
				cs[i] = route.Candidate{
					ID: fmt.Sprintf("r%d", i), Models: []string{"m"}, Healthy: true, Own: &route.Counters{},
					Prefix: (*gpuView)(v), Load: route.Load{Known: true, Report: load.Report{Running: r.Int64N(4), Waiting: r.Int64N(2)}},
				}
			}
			route.Prepare(cs)
			now := time.Now()
			tokens := len(hs)*16 - r.IntN(16) // sometimes a partial last block
			raw := route.Request{Model: "m", Hashes: hs, BlockSize: 16, PromptTokens: tokens, Now: now}
			prepared := raw
			prepared.Prompt = summary.NewPrompt(hs, summary.DefaultHashFuncs)
			i1, d1, err1 := polRaw.Pick(&raw, cs, nil)
			i2, d2, err2 := polPrep.Pick(&prepared, cs, nil)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s iter %d: errors %v, %v", name, iter, err1, err2)
			}
			if i1 != i2 {
				t.Errorf("%s iter %d: picked %d with hashes, %d with the prompt", name, iter, i1, i2)
			}
			if diff := cmp.Diff(d1.Cached, d2.Cached); diff != "" {
				t.Errorf("%s iter %d: Cached mismatch (-hashes +prompt):\n%s", name, iter, diff)
			}
		}
	}
}

// With a prepared prompt, a cache-aware decision over real summaries
// allocates nothing: the per-candidate probes hash nothing and allocate
// nothing (preparing the prompt is once per request, outside this budget).
func TestPreparedPickAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	hs := randomPrompt(r, 128)
	cs := make([]route.Candidate, 64)
	for i := range cs {
		held := 0
		if i%8 == 3 {
			held = 64
		}
		v := randomView(t, r, 4096, 0.01, 1000, hs, held)
		cs[i] = route.Candidate{ID: fmt.Sprintf("r%d", i), Models: []string{"m"}, Healthy: true,
			Own: &route.Counters{}, Prefix: (*gpuView)(v), Load: route.Load{Known: true, Report: load.Report{Running: int64(i % 5)}}}
	}
	route.Prepare(cs)
	req := &route.Request{Model: "m", Hashes: hs, BlockSize: 16, PromptTokens: 128 * 16, Now: time.Now(),
		Prompt: summary.NewPrompt(hs, summary.DefaultHashFuncs)}
	for _, name := range []string{route.PolicyKVAware, route.PolicyCostModel} {
		cfg := route.DefaultConfig()
		cfg.Policy = name
		pol, err := route.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := route.NewScratch(len(cs))
		if n := testing.AllocsPerRun(50, func() {
			if _, _, err := pol.Pick(req, cs, s); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocs per Pick with a prepared prompt, want 0", name, n)
		}
	}
}
