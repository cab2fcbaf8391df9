package blockset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// naive is the obvious model of the block set: per rank, each engine hash
// with the full token prefix it names and the (medium, group) slots holding
// it. Router hashes are computed from the whole prefix with kvblock.Hashes,
// not incrementally.
type naive struct {
	bs    int
	ranks map[int]map[uint64]*naiveEntry
}

type naiveEntry struct {
	prefix []uint32
	slots  map[slot]bool
}

func (n *naive) rank(r int) map[uint64]*naiveEntry {
	if n.ranks[r] == nil {
		n.ranks[r] = map[uint64]*naiveEntry{}
	}
	return n.ranks[r]
}

func (n *naive) apply(r int, ev engine.Event, media map[string]uint8) {
	rs := n.rank(r)
	switch ev := ev.(type) {
	case engine.AllBlocksCleared:
		n.ranks[r] = nil
	case engine.BlockRemoved:
		sl := slot{medium: media[ev.Medium], group: int32(ev.GroupIdx)}
		for _, h := range ev.EngineHashes {
			if e := rs[h]; e != nil && e.slots[sl] {
				delete(e.slots, sl)
				if len(e.slots) == 0 {
					delete(rs, h)
				}
			}
		}
	case engine.BlockStored:
		sl := slot{medium: media[ev.Medium], group: int32(ev.GroupIdx)}
		if ev.SpecKind == "sliding_window" {
			return
		}
		if len(ev.Tokens) == 0 {
			for _, h := range ev.EngineHashes {
				if e := rs[h]; e != nil {
					e.slots[sl] = true
				}
			}
			return
		}
		if ev.BlockSize != n.bs {
			return
		}
		var prefix []uint32
		if ev.Parent != nil {
			p := rs[*ev.Parent]
			if p == nil {
				return
			}
			prefix = p.prefix
		}
		for i, h := range ev.EngineHashes {
			prefix = append(slices.Clip(prefix), ev.Tokens[i*n.bs:(i+1)*n.bs]...)
			e := rs[h]
			if e == nil || !slices.Equal(e.prefix, prefix) {
				e = &naiveEntry{prefix: prefix, slots: map[slot]bool{}}
				rs[h] = e
			}
			e.slots[sl] = true
		}
	}
}

// blocks returns the router hashes held in a medium index, sorted.
func (n *naive) blocks(medium uint8) []kvblock.Hash {
	seen := map[kvblock.Hash]bool{}
	seed := kvblock.NewSeed(model, "", "")
	for _, rs := range n.ranks {
		for _, e := range rs {
			for sl := range e.slots {
				if sl.medium == medium {
					hs := kvblock.Hashes(nil, seed, e.prefix, n.bs)
					seen[hs[len(hs)-1]] = true
				}
			}
		}
	}
	out := make([]kvblock.Hash, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// engineSim produces plausible event streams: prompts share prefixes (small
// alphabet), engine hashes are per rank and per prefix, and it sometimes
// emits orphans, placeholders, partial blocks, other groups, hash reuse,
// removals of unknown hashes, clears, gaps and restarts.
type engineSim struct {
	r      *rand.Rand
	bs     int
	hashes map[int]map[string]uint64 // rank → prefix → engine hash
	held   map[int][]uint64
}

func (e *engineSim) hash(rank int, prefix []uint32) uint64 {
	if e.hashes[rank] == nil {
		e.hashes[rank] = map[string]uint64{}
	}
	k := fmt.Sprint(prefix)
	h, ok := e.hashes[rank][k]
	if !ok {
		h = e.r.Uint64()
		if e.r.IntN(30) == 0 && len(e.held[rank]) > 0 {
			h = e.held[rank][e.r.IntN(len(e.held[rank]))] // reuse: the engine hash now names other tokens
		}
		e.hashes[rank][k] = h
	}
	return h
}

func (e *engineSim) medium() string {
	return [...]string{engine.MediumGPU, engine.MediumGPU, engine.MediumCPU, "DISK"}[e.r.IntN(4)]
}

func (e *engineSim) next(rank int) engine.Event {
	switch k := e.r.IntN(20); {
	case k < 10:
		nblocks := 1 + e.r.IntN(5)
		tokens := make([]uint32, nblocks*e.bs)
		for i := range tokens {
			tokens[i] = uint32(e.r.IntN(2))
		}
		start := e.r.IntN(nblocks)
		ev := engine.BlockStored{Tokens: tokens[start*e.bs:], BlockSize: e.bs, Medium: e.medium()}
		if start > 0 {
			p := e.hash(rank, tokens[:start*e.bs])
			if e.r.IntN(10) == 0 {
				p = e.r.Uint64() // orphan
			}
			ev.Parent = &p
		}
		for i := start; i < nblocks; i++ {
			h := e.hash(rank, tokens[:(i+1)*e.bs])
			ev.EngineHashes = append(ev.EngineHashes, h)
			e.held[rank] = append(e.held[rank], h)
		}
		switch e.r.IntN(12) {
		case 0:
			ev.Tokens, ev.BlockSize, ev.Parent = nil, 0, nil // placeholder
		case 1:
			ev.BlockSize = 1 // partial
			ev.EngineHashes = ev.EngineHashes[:1]
			ev.Tokens = ev.Tokens[:1]
		case 2:
			ev.SpecKind, ev.GroupIdx = "sliding_window", 1
		case 3:
			ev.GroupIdx, ev.SpecKind = 2, "full_attention"
		}
		return ev
	case k < 17:
		ev := engine.BlockRemoved{Medium: e.medium()}
		if e.r.IntN(4) == 0 {
			ev.GroupIdx = 2
		}
		for range 1 + e.r.IntN(2) {
			if len(e.held[rank]) == 0 || e.r.IntN(8) == 0 {
				ev.EngineHashes = append(ev.EngineHashes, e.r.Uint64())
				continue
			}
			ev.EngineHashes = append(ev.EngineHashes, e.held[rank][e.r.IntN(len(e.held[rank]))])
		}
		return ev
	case k == 17:
		return engine.AllBlocksCleared{}
	}
	return nil // a gap or a restart, chosen by the caller
}

func TestSetMatchesNaiveModel(t *testing.T) {
	for seed := range uint64(150) {
		r := rand.New(rand.NewPCG(seed, 99))
		const bs = 2
		s := newSet(t, bs)
		mod := &naive{bs: bs, ranks: map[int]map[uint64]*naiveEntry{}}
		sim := &engineSim{r: r, bs: bs, hashes: map[int]map[string]uint64{}, held: map[int][]uint64{}}
		media := map[string]uint8{}
		feed := map[Change]bool{} // (hash, medium) present according to the change feed
		for step := range 300 {
			rank := r.IntN(3)
			ev := sim.next(rank)
			if ev == nil {
				incomplete := r.IntN(2) == 0
				s.ClearRank(rank, incomplete)
				mod.ranks[rank] = nil
				if !incomplete {
					sim.hashes[rank] = nil // a restarted engine draws new hashes
				}
			} else {
				s.Apply(engine.Batch{Rank: rank, Events: []engine.Event{ev}})
				for _, m := range []string{engine.MediumGPU, engine.MediumCPU, "DISK"} {
					if _, ok := media[m]; !ok {
						media[m] = s.mediumIndex(m)
					}
				}
				mod.apply(rank, ev, media)
			}
			if r.IntN(5) == 0 || step == 299 {
				changes, overflow := s.Drain(nil)
				if overflow {
					t.Fatal("unexpected overflow")
				}
				for _, c := range changes {
					key := Change{Hash: c.Hash, Medium: c.Medium}
					if feed[key] == c.Added {
						t.Fatalf("seed %d step %d: change %+v repeats the feed's state", seed, step, c)
					}
					feed[key] = c.Added
				}
			}
			for m, idx := range media {
				want := mod.blocks(idx)
				got := s.Blocks(nil, m)
				slices.Sort(got)
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("seed %d step %d (%T) medium %s: Blocks mismatch (-want +got):\n%s", seed, step, ev, m, diff)
				}
				if s.LenIn(m) != len(want) {
					t.Fatalf("seed %d step %d: LenIn(%s) = %d, want %d", seed, step, m, s.LenIn(m), len(want))
				}
			}
		}
		// The change feed, replayed, gives the final set.
		for m, idx := range media {
			var fromFeed []kvblock.Hash
			for c, present := range feed {
				if present && c.Medium == m {
					fromFeed = append(fromFeed, c.Hash)
				}
			}
			slices.Sort(fromFeed)
			if diff := cmp.Diff(mod.blocks(idx), fromFeed, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("seed %d medium %s: change feed mismatch (-want +got):\n%s", seed, m, diff)
			}
		}
	}
}
