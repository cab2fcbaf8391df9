package route

import (
	"sync"
	"testing"
)

func TestKVAware(t *testing.T) {
	hs := prompt(4, 4, 96, 128)
	for _, tc := range []struct {
		name string
		edit func(cs []Candidate)
		cfg  func(*Config)
		want int // -1: anything but 2
	}{
		{name: "warm wins at equal load", want: 2},
		{name: "a heavily loaded warm replica loses when load weighs more", edit: func(cs []Candidate) { cs[2].Load.Running = 90 },
			cfg: func(c *Config) { c.KVAware = KVAwareConfig{PrefixWeight: 1, LoadWeight: 3} }, want: -1},
		{name: "a full KV cache loses when usage weighs more", edit: func(cs []Candidate) { cs[2].Load.KVUsage = 1 },
			cfg: func(c *Config) { c.KVAware = KVAwareConfig{PrefixWeight: 1, KVUsageWeight: 3} }, want: -1},
		{name: "load alone picks the least loaded", edit: func(cs []Candidate) {
			cs[0].Load.Running, cs[1].Load.Running, cs[2].Load.Running, cs[3].Load.Running = 5, 4, 6, 3
		}, cfg: func(c *Config) { c.KVAware = KVAwareConfig{LoadWeight: 1} }, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fleet4(hs, 96)
			if tc.edit != nil {
				tc.edit(cs)
			}
			got, d := mustPick(t, newPolicy(t, PolicyKVAware, tc.cfg), req(hs), cs)
			if tc.want >= 0 && got != tc.want || tc.want < 0 && got == 2 {
				t.Errorf("pick %d, want %d; decision %+v", got, tc.want, d)
			}
			if d.Score < 0 || d.Score > 1 {
				t.Errorf("score %v outside [0,1]", d.Score)
			}
		})
	}
}

// With every summary stale, the cache-aware policies assume the prefix's
// prefix_hash owner holds it, so balancers still converge per prefix, and
// the stale summaries' contents are not used.
func TestStaleSummariesFallBackToPrefixHash(t *testing.T) {
	ph := newPolicy(t, PolicyPrefixHash, nil)
	for _, name := range []string{PolicyCostModel, PolicyKVAware} {
		t.Run(name, func(t *testing.T) {
			p := newPolicy(t, name, func(c *Config) { c.Overlay.TTL = 0 })
			for g := range uint32(40) {
				hs := prompt(g, 0, 64, 128)
				cs := cands(6)
				for i := range cs {
					cs[i].SummaryStale = true
				}
				cs[(g+1)%6].Prefix = fakeIndex{}.add(hs) // stale: ignored
				owner, _ := mustPick(t, ph, req(hs), cs)
				got, d := mustPick(t, p, req(hs), cs)
				if got != owner || !d.SummaryFallback {
					t.Fatalf("group %d: pick %d (fallback %v), want the prefix_hash owner %d", g, got, d.SummaryFallback, owner)
				}
				for i, c := range d.Cached {
					want := int32(0)
					if i == owner {
						want = 8 * 16
					}
					if c != want {
						t.Fatalf("group %d: Cached = %v, want %d tokens on the owner %d only", g, d.Cached, 8*16, owner)
					}
				}
			}
		})
	}
}

// Picks from many goroutines on one policy are safe (run with -race).
func TestConcurrentPicks(t *testing.T) {
	for _, name := range allPolicies() {
		t.Run(name, func(t *testing.T) {
			p := newPolicy(t, name, nil)
			cs := cands(16)
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					s := NewScratch(len(cs))
					for i := range 300 {
						r := req(prompt(uint32(i%7), uint32(w*1000+i), 32, 64))
						k, d, err := p.Pick(r, cs, s)
						if err != nil {
							t.Error(err)
							return
						}
						tk := lease(cs[k].Own, d.UncachedTokens)
						cs[k].Own.Done(d.UncachedTokens, 0, tk, false)
					}
				})
			}
			wg.Wait()
			for i := range cs {
				if n := cs[i].Own.InFlight.Load() + cs[i].Own.Pending.Load() + cs[i].Own.PendingPrefillTokens.Load(); n != 0 {
					t.Errorf("counters of %d not back to zero: %d", i, n)
				}
			}
		})
	}
}

// The request path allocates nothing once the scratch has grown.
func TestPickAllocatesNothing(t *testing.T) {
	for _, name := range allPolicies() {
		t.Run(name, func(t *testing.T) {
			p := newPolicy(t, name, nil)
			cs := cands(64)
			hs := prompt(1, 1, 64, 128)
			cs[3].Prefix = fakeIndex{}.add(hs[:64])
			s := NewScratch(len(cs))
			r := req(hs)
			allocs := testing.AllocsPerRun(100, func() {
				if _, _, err := p.Pick(r, cs, s); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s.Pick allocates %v times per decision, want 0", name, allocs)
			}
		})
	}
}
