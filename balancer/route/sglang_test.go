package route

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sglangPolicy returns sglang_cache_aware with edit applied to its config.
func sglangPolicy(t testing.TB, edit func(*SGLangConfig)) *sglangCacheAware {
	t.Helper()
	p := newPolicy(t, PolicySGLangCacheAware, func(c *Config) {
		if edit != nil {
			edit(&c.Baselines.SGLang)
		}
	})
	return p.(*sglangCacheAware)
}

// inFlight sets the balancer's own requests in flight per candidate.
func inFlight(cs []Candidate, loads ...int) {
	for i, l := range loads {
		cs[i].Own.InFlight.Store(int64(l))
	}
}

func TestSGLangChoices(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*SGLangConfig)
		// warm is the replica first sent the 128-block prompt of group 1
		// (through an earlier Pick at equal load); then loads are set and
		// a prompt sharing shared blocks of it is routed.
		loads      []int
		shared     int
		exclude    []int
		want       int
		wantReason Reason
	}{
		{name: "a miss goes to the least loaded", loads: []int{3, 1, 2, 5}, shared: 0, want: 1, wantReason: ReasonSGLangCacheMiss},
		{name: "a hit follows its match", loads: []int{3, 1, 2, 5}, shared: 96, want: 0, wantReason: ReasonSGLangCacheHit},
		{name: "at the threshold it is a miss", loads: []int{3, 1, 2, 5}, shared: 38, want: 1, wantReason: ReasonSGLangCacheMiss},
		{name: "just above the threshold it is a hit", loads: []int{3, 1, 2, 5}, shared: 39, want: 0, wantReason: ReasonSGLangCacheHit},
		{name: "a lower threshold takes the smaller match",
			cfg: func(c *SGLangConfig) { c.CacheThreshold = 0.1 }, loads: []int{3, 1, 2, 5}, shared: 20, want: 0, wantReason: ReasonSGLangCacheHit},
		{name: "the gate passes a hit over both thresholds to the least loaded",
			loads: []int{200, 1, 2, 5}, shared: 96, want: 1, wantReason: ReasonSGLangLoadGate},
		{name: "the gate needs the absolute margin too",
			loads: []int{100, 30, 30, 30}, shared: 96, want: 0, wantReason: ReasonSGLangCacheHit},
		{name: "the gate needs the relative margin too",
			cfg: func(c *SGLangConfig) { c.BalanceAbsThreshold = 10 }, loads: []int{34, 20, 20, 20}, shared: 96, want: 0, wantReason: ReasonSGLangCacheHit},
		{name: "rule imbalance: an imbalanced fleet goes to the least loaded despite a hit",
			cfg: func(c *SGLangConfig) { c.Rule = SGLangRuleImbalance }, loads: []int{100, 30, 2, 40}, shared: 96, want: 2, wantReason: ReasonSGLangImbalance},
		{name: "rule imbalance: max - min must exceed the absolute threshold",
			cfg: func(c *SGLangConfig) { c.Rule = SGLangRuleImbalance }, loads: []int{66, 30, 2, 40}, shared: 96, want: 0, wantReason: ReasonSGLangCacheHit},
		{name: "rule imbalance: max must exceed rel × min",
			cfg: func(c *SGLangConfig) { c.Rule = SGLangRuleImbalance }, loads: []int{209, 150, 140, 180}, shared: 96, want: 0, wantReason: ReasonSGLangCacheHit},
		{name: "rule imbalance: a balanced fleet with a miss goes to the least loaded",
			cfg: func(c *SGLangConfig) { c.Rule = SGLangRuleImbalance }, loads: []int{3, 1, 2, 5}, shared: 0, want: 1, wantReason: ReasonSGLangCacheMiss},
		{name: "a matched replica no longer eligible: the first eligible, as SGLang does",
			loads: []int{3, 1, 2, 5}, shared: 96, exclude: []int{0}, want: 1, wantReason: ReasonSGLangFallback},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sglangPolicy(t, tc.cfg)
			cs := cands(4)
			first := prompt(1, 1, 128, 128)
			// Make replica 0 the warm one: it is the only one eligible.
			r0 := req(first)
			r0.Exclude = []int{1, 2, 3}
			if got, _ := mustPick(t, p, r0, cs); got != 0 {
				t.Fatalf("setup pick %d, want 0", got)
			}
			inFlight(cs, tc.loads...)
			r := req(prompt(1, 2, tc.shared, 128))
			r.Exclude = tc.exclude
			got, d := mustPick(t, p, r, cs)
			if got != tc.want || d.Reason != tc.wantReason {
				t.Errorf("pick %d (%s), want %d (%s); decision %+v", got, d.Reason, tc.want, tc.wantReason, d)
			}
			if want := float64(tc.shared) / 128; d.Score != want {
				t.Errorf("match ratio %v, want %v", d.Score, want)
			}
		})
	}
}

// Under the gate rule a hit goes to the least loaded of the replicas holding
// the matched prefix; under the imbalance rule to the one most recently sent
// it.
func TestSGLangHitAmongTenants(t *testing.T) {
	hs := prompt(7, 7, 64, 64)
	for _, tc := range []struct {
		rule string
		want int
	}{{SGLangRuleGate, 1}, {SGLangRuleImbalance, 2}} {
		t.Run(tc.rule, func(t *testing.T) {
			p := sglangPolicy(t, func(c *SGLangConfig) { c.Rule = tc.rule })
			cs := cands(4)
			// Record the prompt for 1, then 2 (a Pick with only one of them
			// eligible would be SGLang's no-record fallback once the other
			// holds the prompt).
			p.tree.insert(hs, cs[1].key(), 16, t0)
			p.tree.insert(hs, cs[2].key(), 16, t0.Add(time.Second))
			inFlight(cs, 0, 3, 5, 0)
			r := req(hs)
			r.Now = t0.Add(2 * time.Second)
			got, d := mustPick(t, p, r, cs)
			if got != tc.want || d.Reason != ReasonSGLangCacheHit {
				t.Errorf("pick %d (%s), want %d (%s)", got, d.Reason, tc.want, ReasonSGLangCacheHit)
			}
			if want := 63 * 16; d.CachedTokens != want {
				t.Errorf("CachedTokens = %d, want %d (the whole prompt but its last token's block)", d.CachedTokens, want)
			}
		})
	}
}

// Misses at equal load go to the replica sent the fewest requests, so four
// new prompts land on four replicas; the first tie is broken at random,
// reproducibly by seed.
func TestSGLangTiesSpreadAndAreSeeded(t *testing.T) {
	run := func(seed uint64) []int {
		p := newPolicy(t, PolicySGLangCacheAware, func(c *Config) { c.Seed = seed })
		cs := cands(4)
		var got []int
		for g := range uint32(8) {
			i, d := mustPick(t, p, req(prompt(100+g, g, 0, 32)), cs)
			if d.Reason != ReasonSGLangCacheMiss {
				t.Fatalf("prompt %d: reason %s, want a miss", g, d.Reason)
			}
			got = append(got, i)
		}
		return got
	}
	a := run(1)
	seen := map[int]int{}
	for _, i := range a {
		seen[i]++
	}
	if len(seen) != 4 || seen[0] != 2 || seen[1] != 2 || seen[2] != 2 || seen[3] != 2 {
		t.Errorf("8 misses at equal load landed %v, want two per replica", a)
	}
	if diff := cmp.Diff(a, run(1)); diff != "" {
		t.Errorf("same seed, different picks (-first +second):\n%s", diff)
	}
	firsts := map[int]bool{}
	for seed := range uint64(20) {
		firsts[run(seed)[0]] = true
	}
	if len(firsts) < 2 {
		t.Errorf("the first tie went to %v over 20 seeds, want it random", firsts)
	}
}

// With miss smallest_tree, a miss goes to the replica holding the fewest
// tokens in the tree, whatever the loads.
func TestSGLangMissSmallestTree(t *testing.T) {
	p := sglangPolicy(t, func(c *SGLangConfig) { c.Miss = SGLangMissSmallestTree })
	cs := cands(3)
	for i, blocks := range []int{40, 10, 20} {
		r := req(prompt(uint32(10+i), uint32(i), blocks, blocks))
		for j := range cs {
			if j != i {
				r.Exclude = append(r.Exclude, j)
			}
		}
		mustPick(t, p, r, cs)
	}
	inFlight(cs, 0, 9, 0)
	got, d := mustPick(t, p, req(prompt(99, 99, 0, 8)), cs)
	if got != 1 || d.Reason != ReasonSGLangCacheMiss {
		t.Errorf("pick %d (%s), want 1, the smallest tree, despite its load", got, d.Reason)
	}
}

// The tree is cut back to max_tree_size every eviction_interval, least
// recently sent first, and at once when it grows past twice that.
func TestSGLangTreeEviction(t *testing.T) {
	const maxTokens = 64 * 16
	p := sglangPolicy(t, func(c *SGLangConfig) { c.MaxTreeSize, c.EvictionInterval = maxTokens, time.Minute })
	cs := cands(2)
	send := func(g uint32, at time.Duration) {
		r := req(prompt(g, g, 40, 40))
		r.Now = t0.Add(at)
		mustPick(t, p, r, cs)
	}
	send(1, 0)
	send(2, time.Second) // 80 blocks: over the bound, under twice it
	if got := p.tree.total.Load(); got != 80*16 {
		t.Fatalf("tree holds %d tokens before the interval, want %d", got, 80*16)
	}
	send(3, 61*time.Second) // the sweep: 1 and 2 are older than 3
	if got := p.tree.total.Load(); got > maxTokens {
		t.Errorf("tree holds %d tokens after the sweep, want <= %d", got, maxTokens)
	}
	if m := p.tree.match(prompt(3, 3, 40, 40)); m.blocks != 40 {
		t.Errorf("the newest prompt matches %d blocks after the sweep, want 40", m.blocks)
	}
	if m := p.tree.match(prompt(1, 1, 40, 40)); m.blocks != 0 {
		t.Errorf("the oldest prompt matches %d blocks after the sweep, want 0", m.blocks)
	}
	for g := uint32(10); g < 14; g++ { // 160 blocks in the same second: the hard cap
		send(g, 62*time.Second+time.Duration(g)*time.Millisecond)
	}
	if got := p.tree.total.Load(); got > 2*maxTokens {
		t.Errorf("tree holds %d tokens, want <= twice the bound %d between sweeps", got, 2*maxTokens)
	}
	checkTreeSizes(t, p.tree)
}

// checkTreeSizes checks that the tree's total and per-tenant token counts
// agree with its contents.
func checkTreeSizes(t *testing.T, tr *sglangTree) {
	t.Helper()
	want := map[uint64]int64{}
	var total int64
	for i := range tr.shards {
		for _, nd := range tr.shards[i].m {
			if nd.n < 1 || nd.n > sglangTenantsPerBlock {
				t.Fatalf("node with %d tenants", nd.n)
			}
			for k := range nd.n {
				want[nd.ids[k]] += int64(nd.tokens)
				total += int64(nd.tokens)
			}
		}
	}
	if got := tr.total.Load(); got != total {
		t.Errorf("tree total %d, contents hold %d", got, total)
	}
	for id, tn := range tr.tenants {
		if tn.tokens != want[id] {
			t.Errorf("tenant %x: counted %d tokens, holds %d", id, tn.tokens, want[id])
		}
	}
}

// Concurrent decisions with overlapping prompts, displacement (more
// replicas than tenants per block) and sweeps keep the tree's counts exact
// and its size bounded (run with -race).
func TestSGLangTreeConcurrent(t *testing.T) {
	const maxTokens = 200 * 16
	p := sglangPolicy(t, func(c *SGLangConfig) { c.MaxTreeSize, c.EvictionInterval = maxTokens, 10*time.Millisecond })
	cs := cands(12)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			s := NewScratch(len(cs))
			for n := range 400 {
				rq := req(prompt(r.Uint32N(6), uint32(w*1000+n), r.IntN(30), 30))
				rq.Now = t0.Add(time.Duration(n) * time.Millisecond)
				if _, _, err := p.Pick(rq, cs, s); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkTreeSizes(t, p.tree)
	p.tree.maybeSweep(t0.Add(time.Hour), time.Millisecond, maxTokens)
	if got := p.tree.total.Load(); got > maxTokens {
		t.Errorf("tree holds %d tokens after a sweep, want <= %d", got, maxTokens)
	}
	checkTreeSizes(t, p.tree)
}

// More replicas sent one prefix than a block keeps: the least recently sent
// makes room, and the counts stay exact.
func TestSGLangTreeDisplacement(t *testing.T) {
	tr := newSGLangTree()
	hs := prompt(5, 5, 10, 10)
	for id := range uint64(sglangTenantsPerBlock + 3) {
		tr.insert(hs, id+1, 16, t0.Add(time.Duration(id)*time.Second))
	}
	m := tr.match(hs)
	if m.blocks != 10 || m.n != sglangTenantsPerBlock {
		t.Fatalf("match %d blocks, %d tenants; want 10 and %d", m.blocks, m.n, sglangTenantsPerBlock)
	}
	for k := range m.n {
		if m.ids[k] <= 3 {
			t.Errorf("tenant %d, among the three least recent, is still held", m.ids[k])
		}
	}
	checkTreeSizes(t, tr)
	if got, want := tr.total.Load(), int64(10*16*sglangTenantsPerBlock); got != want {
		t.Errorf("total %d, want %d", got, want)
	}
}
