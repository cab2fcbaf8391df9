package summary

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// fakeClock is an injected clock for builder tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestBuilder(t *testing.T, mod func(*Config)) (*Builder, *fakeClock) {
	t.Helper()
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	b, err := NewBuilder(cfg, clk.now)
	if err != nil {
		t.Fatalf("NewBuilder: %v", err)
	}
	return b, clk
}

// chain returns n chained block hashes from a random seed.
func chain(r *rand.Rand, n int) []kvblock.Hash {
	toks := make([]uint32, n*kvblock.DefaultBlockSize)
	for i := range toks {
		toks[i] = r.Uint32N(50000)
	}
	return kvblock.Hashes(nil, kvblock.Hash(r.Uint64()), toks, kvblock.DefaultBlockSize)
}

// mustApply applies msgs to v in order.
func mustApply(t *testing.T, v *View, msgs ...[]byte) {
	t.Helper()
	for _, m := range msgs {
		if err := v.Apply(m); err != nil {
			t.Fatalf("Apply: %v", err)
		}
	}
}

// TestNoFalseNegatives: every block added on the builder side is found by a
// view fed a snapshot and the deltas that followed, on every medium.
func TestNoFalseNegatives(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 20 {
		b, _ := newTestBuilder(t, func(c *Config) { c.Capacity = 2000 })
		v := NewView()
		var held [MaxMedia][]kvblock.Hash
		add := func(n int) {
			for range n {
				m := Medium(r.IntN(2))
				h := kvblock.Hash(r.Uint64())
				b.Add(h, m)
				held[m] = append(held[m], h)
			}
		}
		add(r.IntN(500))
		mustApply(t, v, b.EncodeSnapshot())
		for range 5 {
			add(r.IntN(400))
			deltas, newEpoch := b.Flush()
			if newEpoch { // the first CPU block starts an epoch
				deltas = [][]byte{b.EncodeSnapshot()}
			}
			mustApply(t, v, deltas...)
		}
		for m, hs := range held {
			for _, h := range hs {
				if !v.Contains(h, Medium(m)) {
					t.Fatalf("round %d: false negative for %x on %v", round, h, Medium(m))
				}
			}
		}
		e, s := b.Version()
		if in := v.Info(); in.Epoch != e || in.Seq != s {
			t.Fatalf("view at (%d,%d), builder at (%d,%d)", in.Epoch, in.Seq, e, s)
		}
	}
}

// TestFalsePositiveRate measures the rate on blocks never added: it must be
// within 1.5x of the target at the capacity the filter was sized for.
func TestFalsePositiveRate(t *testing.T) {
	for _, fp := range []float64{0.01, 0.001} {
		b, _ := newTestBuilder(t, func(c *Config) { c.Capacity = 20000; c.FalsePositiveRate = fp })
		r := rand.New(rand.NewPCG(9, 10))
		in := make(map[kvblock.Hash]bool)
		for len(in) < 20000 {
			h := kvblock.Hash(r.Uint64())
			in[h] = true
			b.Add(h, MediumGPU)
		}
		v := NewView()
		mustApply(t, v, b.EncodeSnapshot())
		const trials = 400000
		hits := 0
		for n := 0; n < trials; {
			h := kvblock.Hash(r.Uint64())
			if in[h] {
				continue
			}
			n++
			if v.Contains(h, MediumGPU) {
				hits++
			}
		}
		rate := float64(hits) / trials
		t.Logf("target %.4f measured %.5f (snapshot %d bytes)", fp, rate, len(b.EncodeSnapshot()))
		if rate > 1.5*fp {
			t.Errorf("false-positive rate %.5f > 1.5 x target %.4f", rate, fp)
		}
	}
}

// TestDefaultRateAcrossAFleet: a balancer tests every prompt against every
// replica's filter, so a first block that no replica holds (a cold prompt)
// is matched on some replica with probability 1-(1-p)^n. With the default
// rate, measured on a filter filled to the capacity it was sized for, that
// stays under 2% for 16 replicas (at the former 1% it was 15%:
// docs/routing.md#false-matches-across-a-fleet).
func TestDefaultRateAcrossAFleet(t *testing.T) {
	const replicas, held, trials = 16, 20000, 400000
	b, _ := newTestBuilder(t, func(c *Config) { c.Capacity = held })
	r := rand.New(rand.NewPCG(29, 30))
	in := make(map[kvblock.Hash]bool, held)
	for len(in) < held {
		h := kvblock.Hash(r.Uint64())
		in[h] = true
		b.Add(h, MediumGPU)
	}
	v := NewView()
	mustApply(t, v, b.EncodeSnapshot())
	hits := 0
	for n := 0; n < trials; {
		h := kvblock.Hash(r.Uint64())
		if in[h] {
			continue
		}
		n++
		if v.Contains(h, MediumGPU) {
			hits++
		}
	}
	p := float64(hits) / trials
	fleet := 1 - math.Pow(1-p, replicas)
	t.Logf("default rate %v: measured %.5f per filter, %.4f across %d replicas", DefaultConfig().FalsePositiveRate, p, fleet, replicas)
	if fleet > 0.02 {
		t.Errorf("a cold prompt's first block matches on some of %d replicas with probability %.4f, want <= 0.02", replicas, fleet)
	}
}

// TestLongestPrefixMatchesExact compares the view's longest prefix with the
// exact set's: never shorter, and longer only by a false-positive tail whose
// first block is really absent.
func TestLongestPrefixMatchesExact(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	b, _ := newTestBuilder(t, func(c *Config) { c.Capacity = 30000 })
	exact := make(map[kvblock.Hash]bool)
	var prompts [][]kvblock.Hash
	for range 600 {
		p := chain(r, 1+r.IntN(64))
		prompts = append(prompts, p)
		for _, h := range p[:r.IntN(len(p)+1)] { // a cached prefix of each prompt
			exact[h] = true
			b.Add(h, MediumGPU)
		}
	}
	v := NewView()
	mustApply(t, v, b.EncodeSnapshot())
	equal, extra := 0, 0
	for _, p := range prompts {
		want := 0
		for want < len(p) && exact[p[want]] {
			want++
		}
		got := v.LongestPrefix(p, MediumGPU)
		switch {
		case got < want:
			t.Fatalf("LongestPrefix = %d < exact %d (false negative)", got, want)
		case got == want:
			equal++
		default:
			if exact[p[want]] {
				t.Fatalf("tail starts at a held block")
			}
			extra += got - want
		}
	}
	t.Logf("equal %d/%d, extra blocks %d", equal, len(prompts), extra)
	if equal < len(prompts)*97/100 {
		t.Errorf("only %d/%d prompts matched exactly at 1%% false positives", equal, len(prompts))
	}
	if got := v.LongestPrefix(nil, MediumGPU); got != 0 {
		t.Errorf("LongestPrefix(nil) = %d", got)
	}
	if got := v.LongestPrefix(prompts[0], MediumCPU); got != 0 {
		t.Errorf("LongestPrefix on a medium without a filter = %d", got)
	}
}

func TestApplyGapsAndStale(t *testing.T) {
	b, _ := newTestBuilder(t, nil)
	b.Add(1, MediumGPU)
	snap0 := b.EncodeSnapshot()
	b.Add(2, MediumGPU)
	d1, _ := b.Flush()
	b.Add(3, MediumGPU)
	d2, _ := b.Flush()
	b.Add(4, MediumGPU)
	d3, _ := b.Flush()
	oldEpochSnap := b.EncodeSnapshot()
	b.Rebuild()
	b.Add(5, MediumGPU)
	e1, _ := b.Flush()

	tests := []struct {
		name    string
		msgs    [][]byte
		wantErr error
	}{
		{name: "delta before snapshot", msgs: [][]byte{d1[0]}, wantErr: ErrGap},
		{name: "in order", msgs: [][]byte{snap0, d1[0], d2[0], d3[0]}},
		{name: "missing seq", msgs: [][]byte{snap0, d1[0], d3[0]}, wantErr: ErrGap},
		{name: "duplicate", msgs: [][]byte{snap0, d1[0], d1[0]}, wantErr: ErrStale},
		{name: "delta of the next epoch", msgs: [][]byte{snap0, e1[0]}, wantErr: ErrGap},
		{name: "older snapshot", msgs: [][]byte{oldEpochSnap, snap0}, wantErr: ErrStale},
		{name: "snapshot then its delta", msgs: [][]byte{oldEpochSnap, b.EncodeSnapshot()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := NewView()
			var err error
			for _, m := range tc.msgs {
				err = v.Apply(m)
			}
			if !errors.Is(err, tc.wantErr) && !(tc.wantErr == nil && err == nil) {
				t.Fatalf("last Apply = %v, want %v", err, tc.wantErr)
			}
		})
	}
	// A gap leaves the view as it was.
	v := NewView()
	mustApply(t, v, snap0, d1[0])
	_ = v.Apply(d3[0])
	if v.Contains(4, MediumGPU) && !v.Contains(3, MediumGPU) {
		t.Error("delta applied across a gap")
	}
	if in := v.Info(); in.Seq != 1 {
		t.Errorf("seq after gap = %d, want 1", in.Seq)
	}
}

// TestViewConcurrentReads runs readers against a writer (meaningful under
// -race): reads see a consistent, monotone view.
func TestViewConcurrentReads(t *testing.T) {
	b, _ := newTestBuilder(t, nil)
	v := NewView()
	mustApply(t, v, b.EncodeSnapshot())
	r := rand.New(rand.NewPCG(15, 16))
	p := chain(r, 200)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			last := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := v.LongestPrefix(p, MediumGPU)
				if n < last {
					t.Errorf("prefix shrank from %d to %d within an epoch", last, n)
					return
				}
				last = n
			}
		})
	}
	for _, h := range p {
		b.Add(h, MediumGPU)
		d, _ := b.Flush()
		mustApply(t, v, d...)
	}
	close(stop)
	wg.Wait()
	if got := v.LongestPrefix(p, MediumGPU); got != len(p) {
		t.Fatalf("LongestPrefix = %d, want %d", got, len(p))
	}
}

func BenchmarkLongestPrefix(b *testing.B) {
	bl, err := NewBuilder(DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(17, 18))
	p := chain(r, 128)
	for _, h := range p[:96] {
		bl.Add(h, MediumGPU)
	}
	v := NewView()
	if err := v.Apply(bl.EncodeSnapshot()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if v.LongestPrefix(p, MediumGPU) < 96 {
			b.Fatal("short match")
		}
	}
}

// TestPromptMatchesLongestPrefix: the prepared path gives LongestPrefix's
// answer, for filters with fewer, equal and more hash functions than the
// prompt was prepared for.
func TestPromptMatchesLongestPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, fp := range []float64{0.2, 0.01, 0.0001} {
		b, _ := newTestBuilder(t, func(c *Config) { c.Capacity = 5000; c.FalsePositiveRate = fp })
		var prompts [][]kvblock.Hash
		for range 200 {
			p := chain(r, 1+r.IntN(40))
			prompts = append(prompts, p)
			for _, h := range p[:r.IntN(len(p)+1)] {
				b.Add(h, MediumGPU)
			}
		}
		v := NewView()
		mustApply(t, v, b.EncodeSnapshot())
		var pr Prompt
		for _, p := range prompts {
			pr.Reset(p, DefaultHashFuncs)
			if got, want := v.LongestPrefixOf(&pr, MediumGPU), v.LongestPrefix(p, MediumGPU); got != want {
				t.Fatalf("fp %v: LongestPrefixOf = %d, LongestPrefix = %d", fp, got, want)
			}
		}
	}
	if DefaultHashFuncs != 10 {
		t.Errorf("DefaultHashFuncs = %d, want 10 at 0.1%%", DefaultHashFuncs)
	}
}

func BenchmarkLongestPrefixOf(b *testing.B) {
	bl, err := NewBuilder(DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(17, 18))
	p := chain(r, 128)
	for _, h := range p[:96] {
		bl.Add(h, MediumGPU)
	}
	v := NewView()
	if err := v.Apply(bl.EncodeSnapshot()); err != nil {
		b.Fatal(err)
	}
	pr := NewPrompt(p, DefaultHashFuncs)
	b.ReportAllocs()
	for b.Loop() {
		if v.LongestPrefixOf(pr, MediumGPU) < 96 {
			b.Fatal("short match")
		}
	}
}

func BenchmarkPromptReset(b *testing.B) {
	p := chain(rand.New(rand.NewPCG(21, 22)), 128)
	var pr Prompt
	b.ReportAllocs()
	for b.Loop() {
		pr.Reset(p, DefaultHashFuncs)
	}
}

// BenchmarkApplyDelta measures a balancer applying one full delta (the
// receive-side cost per sidecar per tick at ~2,900 new blocks/s).
func BenchmarkApplyDelta(b *testing.B) {
	bl, err := NewBuilder(DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	v := NewView()
	if err := v.Apply(bl.EncodeSnapshot()); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(23, 24))
	for range 290 {
		bl.Add(kvblock.Hash(r.Uint64()), MediumGPU)
	}
	deltas, _ := bl.Flush()
	if len(deltas) != 1 {
		b.Fatalf("%d deltas", len(deltas))
	}
	d, err := UnmarshalDelta(deltas[0])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(deltas[0])))
	for b.Loop() {
		// Re-apply the same delta at the next sequence.
		d.Seq = v.Info().Seq + 1
		if err := v.Apply(d.Marshal(nil)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuilderAdd measures the sidecar side of one new block.
func BenchmarkBuilderAdd(b *testing.B) {
	bl, err := NewBuilder(Config{Capacity: 1 << 20, FalsePositiveRate: 0.01, RebuildRemovals: 0.25,
		RebuildPeriod: time.Hour, MaxDeltaBytes: 1200}, nil)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(25, 26))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		bl.Add(kvblock.Hash(r.Uint64()), MediumGPU)
		if i++; i%200 == 0 {
			bl.Flush()
		}
	}
}

// BenchmarkBuilderReset measures a rebuild from a whole set of 32,768 GPU
// blocks (an H100's worth): the set, the per-key counts and the filter.
func BenchmarkBuilderReset(b *testing.B) {
	bl, err := NewBuilder(DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(27, 28))
	hs := make([]kvblock.Hash, 32768)
	for i := range hs {
		hs[i] = kvblock.Hash(r.Uint64())
	}
	sets := map[Medium][]kvblock.Hash{MediumGPU: hs}
	b.ReportAllocs()
	for b.Loop() {
		bl.Reset(sets)
	}
}

// TestViewForgetsRemovedBlocks follows a builder through random additions
// and removals, with a view fed its deltas and a second view started from a
// snapshot midway: held blocks are always found (no false negatives), blocks
// removed since are never found, and both views agree on every block.
func TestViewForgetsRemovedBlocks(t *testing.T) {
	b, _ := newTestBuilder(t, func(c *Config) { c.Capacity, c.RebuildRemovals = 4096, 100 })
	follow := NewView()
	mustApply(t, follow, b.EncodeSnapshot())
	r := rand.New(rand.NewPCG(21, 22))
	held := map[kvblock.Hash]bool{}
	var all []kvblock.Hash
	var late *View
	for round := range 40 {
		for range 50 {
			if len(all) > 0 && r.IntN(2) == 0 {
				h := all[r.IntN(len(all))]
				if held[h] {
					b.Remove(h, MediumGPU)
				} else {
					b.Add(h, MediumGPU)
				}
				held[h] = !held[h]
				continue
			}
			h := kvblock.Hash(r.Uint64())
			all = append(all, h)
			held[h] = true
			b.Add(h, MediumGPU)
		}
		deltas, newEpoch := b.Flush()
		if newEpoch {
			t.Fatal("unexpected rebuild")
		}
		mustApply(t, follow, deltas...)
		if late != nil {
			mustApply(t, late, deltas...)
		}
		if round == 20 {
			late = NewView()
			mustApply(t, late, b.EncodeSnapshot())
		}
		for _, h := range all {
			got := follow.Contains(h, MediumGPU)
			if got != held[h] && (held[h] || !b.collides(h)) {
				t.Fatalf("round %d: view says %v for a block held=%v", round, got, held[h])
			}
			if prepared := follow.LongestPrefixOf(NewPrompt([]kvblock.Hash{h}, DefaultHashFuncs), MediumGPU) == 1; prepared != got {
				t.Fatalf("round %d: a prepared prompt says %v where Contains says %v", round, prepared, got)
			}
			if late != nil && late.Contains(h, MediumGPU) != got {
				t.Fatalf("round %d: the snapshot-started view disagrees on a block (held=%v)", round, held[h])
			}
		}
	}
}

// A snapshot taken while changes wait for the next delta counts the blocks
// as of its version, so a view fed the snapshot and then that delta counts
// exactly what the builder holds (the pending changes are not counted
// twice: a pending removal used to take the view one block below).
func TestSnapshotCountsAtItsVersion(t *testing.T) {
	b, _ := newTestBuilder(t, nil)
	r := rand.New(rand.NewPCG(31, 32))
	hs := chain(r, 20)
	for _, h := range hs {
		b.Add(h, MediumGPU)
	}
	b.Flush()
	b.Remove(hs[3], MediumGPU) // pending
	b.Add(kvblock.Hash(r.Uint64()), MediumGPU)
	b.Remove(hs[7], MediumGPU)
	b.Remove(hs[9], MediumGPU)
	snap := b.EncodeSnapshot() // taken while the four changes are pending
	v := NewView()
	mustApply(t, v, snap)
	deltas, newEpoch := b.Flush()
	if newEpoch || len(deltas) == 0 {
		t.Fatalf("flush: %d deltas, new epoch %v", len(deltas), newEpoch)
	}
	mustApply(t, v, deltas...)
	if got, want := v.Info().Blocks[MediumGPU], uint64(b.Len(MediumGPU)); got != want {
		t.Errorf("view counts %d blocks, the builder holds %d", got, want)
	}
}
