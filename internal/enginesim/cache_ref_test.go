package enginesim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// refModel is a naive re-statement of vLLM's scheduler and BlockPool with
// plain slices and maps: the free queue is a slice (front = next to evict),
// the cache maps a hash to the ids of the blocks holding it in insertion
// order, and hashes are recomputed from scratch whenever they are needed.
type refModel struct {
	bs, budget, maxSeqs int
	ref                 []int // per block: reference count
	hashOf              map[int]kvblock.Hash
	free                []int
	cache               map[kvblock.Hash][]int
	waiting, running    []*refSeq
	events              []string
	stepHasEvents       bool
	ehash               func(kvblock.Hash) uint64
}

type refSeq struct {
	id                     int
	seed                   kvblock.Hash
	tokens                 []uint32
	maxTokens, minTokens   int
	gen                    func(int) uint32
	blocks                 []int
	cachedBlocks, computed int
	out                    int
	cachedTokens           int
	finished               bool
	reason                 string
	generated              []uint32
}

func newRefModel(cfg EngineConfig, ehash func(kvblock.Hash) uint64) *refModel {
	m := &refModel{
		bs: cfg.BlockSize, budget: cfg.MaxNumBatchedTokens, maxSeqs: cfg.MaxNumSeqs,
		ref: make([]int, cfg.NumGPUBlocks), hashOf: map[int]kvblock.Hash{},
		cache: map[kvblock.Hash][]int{}, ehash: ehash,
	}
	for i := 1; i < cfg.NumGPUBlocks; i++ {
		m.free = append(m.free, i)
	}
	return m
}

func (m *refModel) emit(s string) {
	m.events = append(m.events, s)
	m.stepHasEvents = true
}

func (m *refModel) hashes(s *refSeq) []kvblock.Hash {
	return kvblock.Hashes(nil, s.seed, s.tokens, m.bs)
}

func (m *refModel) alloc(s *refSeq, n int, hit []int) bool {
	total := s.computed + n
	need := (total+m.bs-1)/m.bs - len(s.blocks) - len(hit)
	if need < 0 {
		need = 0
	}
	evictable := 0
	for _, id := range hit {
		if m.ref[id] == 0 {
			evictable++
		}
	}
	if need > len(m.free)-evictable {
		return false
	}
	for _, id := range hit {
		if m.ref[id] == 0 {
			m.free = slices.DeleteFunc(m.free, func(x int) bool { return x == id })
		}
		m.ref[id]++
		s.blocks = append(s.blocks, id)
	}
	if len(hit) > 0 {
		s.cachedBlocks = len(hit)
	}
	for range need {
		id := m.free[0]
		m.free = m.free[1:]
		if h, ok := m.hashOf[id]; ok {
			m.cache[h] = slices.DeleteFunc(m.cache[h], func(x int) bool { return x == id })
			if len(m.cache[h]) == 0 {
				delete(m.cache, h)
			}
			delete(m.hashOf, id)
			m.emit(fmt.Sprintf("R %x", m.ehash(h)))
		}
		m.ref[id] = 1
		s.blocks = append(s.blocks, id)
	}
	full := min(total, len(s.tokens)) / m.bs
	if full > s.cachedBlocks {
		hs := m.hashes(s)
		var parent *uint64
		if s.cachedBlocks > 0 {
			p := m.ehash(hs[s.cachedBlocks-1])
			parent = &p
		}
		var eh []uint64
		for j := s.cachedBlocks; j < full; j++ {
			id := s.blocks[j]
			m.hashOf[id] = hs[j]
			m.cache[hs[j]] = append(m.cache[hs[j]], id)
			eh = append(eh, m.ehash(hs[j]))
		}
		m.emit(coreFmtStored(eh, parent, s.tokens[s.cachedBlocks*m.bs:full*m.bs], m.bs, ""))
		s.cachedBlocks = full
	}
	return true
}

func (m *refModel) freeSeq(s *refSeq) {
	var back []int
	for i := len(s.blocks) - 1; i >= 0; i-- {
		id := s.blocks[i]
		m.ref[id]--
		if m.ref[id] == 0 {
			back = append(back, id)
		}
	}
	m.free = append(m.free, back...)
	s.blocks = nil
	s.cachedBlocks = 0
}

func (m *refModel) step() {
	budget := m.budget
	type item struct {
		s *refSeq
		n int
	}
	var sched []item
	preempted := false
running:
	for i := 0; i < len(m.running) && budget > 0; i++ {
		s := m.running[i]
		n := min(len(s.tokens)-s.computed, budget)
		if n <= 0 {
			continue
		}
		for !m.alloc(s, n, nil) {
			v := m.running[len(m.running)-1]
			m.running = m.running[:len(m.running)-1]
			m.freeSeq(v)
			v.computed = 0
			m.waiting = append([]*refSeq{v}, m.waiting...)
			preempted = true
			if v == s {
				break running
			}
		}
		sched = append(sched, item{s, n})
		budget -= n
	}
	if !preempted {
		for len(m.waiting) > 0 && budget > 0 && len(m.running) < m.maxSeqs {
			s := m.waiting[0]
			hs := m.hashes(s)
			var hit []int
			for j := 0; j < (len(s.tokens)-1)/m.bs; j++ {
				ids := m.cache[hs[j]]
				if len(ids) == 0 {
					break
				}
				hit = append(hit, ids[0])
			}
			s.computed = len(hit) * m.bs
			n := min(len(s.tokens)-s.computed, budget)
			if !m.alloc(s, n, hit) {
				s.computed = 0
				break
			}
			m.waiting = m.waiting[1:]
			m.running = append(m.running, s)
			if s.cachedTokens < 0 {
				s.cachedTokens = len(hit) * m.bs
			}
			sched = append(sched, item{s, n})
			budget -= n
		}
	}
	for _, it := range sched {
		it.s.computed += it.n
	}
	for _, it := range sched {
		s := it.s
		if s.computed < len(s.tokens) {
			continue
		}
		tok := s.gen(s.out)
		s.tokens = append(s.tokens, tok)
		s.generated = append(s.generated, tok)
		s.out++
		switch {
		case s.out >= s.maxTokens:
			s.reason = "length"
		case s.out-1 >= s.minTokens && tok == 0:
			s.reason = "stop"
		}
		if s.reason != "" {
			s.finished = true
			m.freeSeq(s)
		}
	}
	m.running = slices.DeleteFunc(m.running, func(s *refSeq) bool { return s.finished })
	m.endStep()
}

func (m *refModel) endStep() {
	if m.stepHasEvents {
		m.events = append(m.events, "E")
		m.stepHasEvents = false
	}
}

func (m *refModel) abort(s *refSeq) {
	if s.finished {
		return
	}
	m.running = slices.DeleteFunc(m.running, func(x *refSeq) bool { return x == s })
	m.waiting = slices.DeleteFunc(m.waiting, func(x *refSeq) bool { return x == s })
	m.freeSeq(s)
	s.finished, s.reason = true, "abort"
}

func (m *refModel) reset() bool {
	if len(m.free) != len(m.ref)-1 {
		return false
	}
	m.cache = map[kvblock.Hash][]int{}
	m.hashOf = map[int]kvblock.Hash{}
	m.emit("C")
	m.endStep()
	return true
}

func (m *refModel) cachedSet() []kvblock.Hash {
	var out []kvblock.Hash
	for h := range m.cache {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// TestCacheMatchesReferenceModel drives the engine and the reference model
// with the same random requests, steps, aborts and resets and compares hits,
// outputs, the cached set, occupancy and the KV event stream after every
// operation.
func TestCacheMatchesReferenceModel(t *testing.T) {
	for seed := range uint64(150) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRefScenario(t, seed) })
	}
}

func runRefScenario(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := coreTestConfig()
	cfg.BlockSize = 1 + rng.IntN(6)
	cfg.NumGPUBlocks = 8 + rng.IntN(60)
	cfg.MaxNumBatchedTokens = 4 + rng.IntN(60)
	cfg.MaxNumSeqs = 1 + rng.IntN(6)
	cfg.MaxModelLen = 400
	sink := &coreRecSink{}
	e := coreMustEngine(t, cfg, nil, sink)
	ref := newRefModel(cfg, e.pool.engineHash)

	type live struct {
		r      *refSeq
		st     *Stream
		toks   []uint32
		last   Output
		closed bool
	}
	var all []*live
	docs := make([][]uint32, 4)
	for i := range docs {
		docs[i] = coreTokens(1000*(i+1), rng.IntN(40))
	}
	var history [][]uint32 // finished sequences' tokens, for multi-turn prompts
	seeds := []kvblock.Hash{kvblock.NewSeed("m", "", ""), kvblock.NewSeed("m", "", "salt")}

	collect := func() {
		for _, l := range all {
			if l.closed {
				continue
			}
			toks, last, closed := coreDrain(l.st.Out)
			l.toks = append(l.toks, toks...)
			if last.Finished || closed {
				l.last = last
			}
			if closed {
				l.closed = true
				if len(l.toks) > 0 {
					history = append(history, append(slices.Clone(l.r.tokens[:len(l.r.tokens)-len(l.r.generated)]), l.toks...))
				}
			}
		}
	}

	for op := 0; op < 120; op++ {
		switch k := rng.IntN(10); {
		case k < 4: // submit
			var prompt []uint32
			switch rng.IntN(3) {
			case 0:
				prompt = slices.Clone(docs[rng.IntN(len(docs))])
			case 1:
				if len(history) > 0 {
					prompt = slices.Clone(history[rng.IntN(len(history))])
				}
			}
			prompt = append(prompt, coreTokens(rng.IntN(1<<20), 1+rng.IntN(30))...)
			id := len(all)
			eosAt := rng.IntN(40)
			gen := func(i int) uint32 {
				if i == eosAt {
					return 0
				}
				return uint32(500000 + id*1000 + i)
			}
			maxTok := 1 + rng.IntN(30)
			minTok := rng.IntN(4)
			sd := seeds[rng.IntN(len(seeds))]
			req := &Request{ID: fmt.Sprint(id), Prompt: prompt, Seed: sd, MaxTokens: maxTok, MinTokens: minTok, Generate: gen}
			st, err := e.Submit(req)
			if len(prompt)+maxTok-1 > cfg.kvTokens() || len(prompt)+maxTok > cfg.MaxModelLen {
				var pe *PromptTooLongError
				if !errors.As(err, &pe) {
					t.Fatalf("op %d: Submit(%d+%d tokens) err = %v, want PromptTooLongError", op, len(prompt), maxTok, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("op %d: Submit: %v", op, err)
			}
			r := &refSeq{id: id, seed: sd, tokens: slices.Clone(prompt), maxTokens: maxTok, minTokens: minTok, gen: gen, cachedTokens: -1}
			ref.waiting = append(ref.waiting, r)
			all = append(all, &live{r: r, st: st})
		case k < 8: // steps
			for range 1 + rng.IntN(4) {
				coreStep(e)
				ref.step()
			}
		case k < 9: // abort
			var act []*live
			for _, l := range all {
				if !l.r.finished {
					act = append(act, l)
				}
			}
			if len(act) > 0 {
				l := act[rng.IntN(len(act))]
				l.st.Abort("abort")
				ref.abort(l.r)
			}
		default:
			if got, want := e.ResetPrefixCache(), ref.reset(); got != want {
				t.Fatalf("op %d: ResetPrefixCache() = %v, want %v", op, got, want)
			}
		}
		collect()

		var gotSet []kvblock.Hash
		for _, b := range e.CachedBlocks() {
			gotSet = append(gotSet, b.Hash)
		}
		if diff := cmp.Diff(ref.cachedSet(), gotSet); diff != "" {
			t.Fatalf("op %d: cached set mismatch (-ref +engine):\n%s", op, diff)
		}
		if diff := cmp.Diff(ref.events, sink.events()); diff != "" {
			t.Fatalf("op %d: event stream mismatch (-ref +engine):\n%s", op, diff)
		}
		ld := e.Load()
		if ld.Running != len(ref.running) || ld.Waiting+ld.Pending != len(ref.waiting) || ld.FreeBlocks != len(ref.free) {
			t.Fatalf("op %d: load %+v, ref running=%d waiting=%d free=%d", op, ld, len(ref.running), len(ref.waiting), len(ref.free))
		}
	}
	// Finish everything and compare per-request results.
	for range 10000 {
		if !coreStep(e) {
			break
		}
		ref.step()
	}
	collect()
	for _, l := range all {
		if !l.closed {
			t.Fatalf("request %d: stream not closed", l.r.id)
		}
		if l.r.cachedTokens >= 0 && l.last.CachedTokens != l.r.cachedTokens {
			t.Errorf("request %d: CachedTokens = %d, want %d", l.r.id, l.last.CachedTokens, l.r.cachedTokens)
		}
		if l.last.FinishReason != l.r.reason {
			t.Errorf("request %d: finish reason %q, want %q", l.r.id, l.last.FinishReason, l.r.reason)
		}
		if diff := cmp.Diff(l.r.generated, l.toks); diff != "" {
			t.Errorf("request %d: tokens mismatch (-ref +engine):\n%s", l.r.id, diff)
		}
	}
	if diff := cmp.Diff(ref.events, sink.events()); diff != "" {
		t.Fatalf("final event stream mismatch (-ref +engine):\n%s", diff)
	}
}
