package route

import "testing"

// A context only one replica holds, in no running request's blocks, is
// evicted when the prefill queued ahead of the request there outgrows the
// free memory; a prefix every replica holds, or one held by running requests
// (more of it than is free), is not. The prediction the decision reports is
// what the request finds when it is admitted.
func TestCostModelPredictsEvictionWhileQueued(t *testing.T) {
	hs := prompt(7, 7, 32, 256) // 4,096 tokens: 512 of a shared head, then the conversation
	const capacity = 4096       // blocks: 65,536 tokens
	for _, tc := range []struct {
		name string
		// free is replica 2's free memory in tokens, queued the uncached
		// prefill queued there.
		free, queued int
		want         int // predicted cached tokens on replica 2
	}{
		{"no queue: the context stays", 8192, 0, 4080},
		{"queue within the free memory: stays", 16384, 8000, 4080},
		{"queue past the free memory: evicted to the shared head", 4096, 20000, 512},
		{"queue eating into it: its tail goes", 8192, 6000, 512 + 2192/16*16},
		{"memory full: what is cached is held, it stays", 0, 20000, 4080},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cands(4)
			withCapacity(cs, capacity)
			for i := range cs {
				cs[i].Load.KVUsage = 0.5
				cs[i].Prefix = fakeIndex{}.add(hs[:32])
			}
			cs[2].Prefix = fakeIndex{}.add(hs)
			cs[2].Load.KVUsage = 1 - float64(tc.free)/(capacity*16)
			cs[2].Load.Exact, cs[2].Load.InFlight, cs[2].Load.Pending, cs[2].Load.PrefillTokens = true, 2, 2, int64(tc.queued)
			p := newPolicy(t, PolicyCostModel, nil)
			_, d, err := p.Pick(req(hs), cs, &Scratch{})
			if err != nil {
				t.Fatal(err)
			}
			if got := int(d.Cached[2]); got != tc.want {
				t.Errorf("replica 2 predicted to hold %d tokens at admission, want %d", got, tc.want)
			}
			for _, i := range []int{0, 1, 3} {
				if got := int(d.Cached[i]); got != 512 {
					t.Errorf("replica %d predicted %d tokens, want the shared head's 512", i, got)
				}
			}
		})
	}
}

// With the context predicted lost at a replica whose queue outgrows its free
// memory, the request goes where it waits least, not to that queue.
func TestCostModelLeavesAContextAboutToBeEvicted(t *testing.T) {
	hs := prompt(7, 7, 32, 256)
	cs := cands(4)
	withCapacity(cs, 4096)
	for i := range cs {
		cs[i].Load.KVUsage = 0.5
		cs[i].Prefix = fakeIndex{}.add(hs[:32])
	}
	cs[2].Prefix = fakeIndex{}.add(hs)
	// 3,000 tokens queued at replica 2: with 4,080 cached there it would be
	// the fastest, but 4,000 tokens are free and the queue's prefill evicts
	// all but 992 of the context's 3,568 before the request is admitted.
	cs[2].Load.KVUsage = 1 - 4000.0/(4096*16)
	cs[2].Load.Exact, cs[2].Load.InFlight, cs[2].Load.Pending, cs[2].Load.PrefillTokens = true, 1, 1, 3000
	i, d := mustPick(t, newPolicy(t, PolicyCostModel, nil), req(hs), cs)
	if i == 2 {
		t.Fatalf("picked replica 2, whose context the queue ahead evicts (decision %+v)", d)
	}
	if d.Cached[2] != 512+992 {
		t.Errorf("replica 2 predicted to hold %d tokens at admission, want %d", d.Cached[2], 512+992)
	}
}
