package blockset

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
)

const model = "m"

func newSet(t *testing.T, bs int) *Set {
	t.Helper()
	s, err := New(Config{Model: model, BlockSize: bs}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func toks(start, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(start + i)
	}
	return out
}

func ptr(v uint64) *uint64 { return &v }

func stored(hashes []uint64, parent *uint64, tokens []uint32, bs int) engine.BlockStored {
	return engine.BlockStored{EngineHashes: hashes, Parent: parent, Tokens: tokens, BlockSize: bs, Medium: engine.MediumGPU}
}

func batch(rank int, evs ...engine.Event) engine.Batch { return engine.Batch{Rank: rank, Events: evs} }

func sorted(h []kvblock.Hash) []kvblock.Hash { slices.Sort(h); return h }

func TestChainIsRehashedFromTokens(t *testing.T) {
	s := newSet(t, 4)
	all := toks(100, 12)
	s.Apply(batch(0, stored([]uint64{11, 12}, nil, all[:8], 4)))
	s.Apply(batch(0, stored([]uint64{13}, ptr(12), all[8:], 4)))
	want := kvblock.Hashes(nil, kvblock.NewSeed(model, "", ""), all, 4)
	if diff := cmp.Diff(sorted(slices.Clone(want)), sorted(s.Blocks(nil, ""))); diff != "" {
		t.Errorf("Blocks mismatch (-want +got):\n%s", diff)
	}
	for _, h := range want {
		if !s.ContainsIn(h, engine.MediumGPU) || s.ContainsIn(h, engine.MediumCPU) {
			t.Errorf("block %x: GPU %v CPU %v", h, s.ContainsIn(h, engine.MediumGPU), s.ContainsIn(h, engine.MediumCPU))
		}
	}
	changes, overflow := s.Drain(nil)
	if overflow || len(changes) != 3 {
		t.Fatalf("Drain = %v, %v; want 3 additions", changes, overflow)
	}
	for i, c := range changes {
		if c != (Change{Hash: want[i], Medium: engine.MediumGPU, Added: true}) {
			t.Errorf("change %d = %+v", i, c)
		}
	}
}

func TestSeedsSeparateLoRAAndSalt(t *testing.T) {
	s := newSet(t, 4)
	tk := toks(0, 4)
	plain := stored([]uint64{1}, nil, tk, 4)
	lora := plain
	lora.EngineHashes, lora.LoRA = []uint64{2}, "ad"
	salted := plain
	salted.EngineHashes, salted.CacheSalt = []uint64{3}, "salt"
	s.Apply(batch(0, plain, lora, salted))
	for _, seed := range []kvblock.Hash{kvblock.NewSeed(model, "", ""), kvblock.NewSeed(model, "ad", ""), kvblock.NewSeed(model, "", "salt")} {
		if !s.Contains(kvblock.Next(seed, tk)) {
			t.Errorf("missing block for seed %x", seed)
		}
	}
	if s.Len() != 3 {
		t.Errorf("Len = %d, want 3", s.Len())
	}
}

func TestToleratedEvents(t *testing.T) {
	tk := toks(0, 8)
	seed := kvblock.NewSeed(model, "", "")
	h0 := kvblock.Next(seed, tk[:4])
	for _, tc := range []struct {
		name   string
		events []engine.Event
		want   []kvblock.Hash
		stats  Stats
	}{
		{"re-announcement is idempotent", []engine.Event{stored([]uint64{1}, nil, tk[:4], 4), stored([]uint64{1}, nil, tk[:4], 4)},
			[]kvblock.Hash{h0}, Stats{Stored: 2}},
		{"placeholder via known hash", []engine.Event{stored([]uint64{1}, nil, tk[:4], 4),
			engine.BlockStored{EngineHashes: []uint64{1, 9}, Medium: engine.MediumCPU}},
			[]kvblock.Hash{h0}, Stats{Stored: 1, PlaceholderMapped: 1, SkippedPlaceholder: 1}},
		{"partial block", []engine.Event{stored([]uint64{1}, nil, tk[:2], 2)}, nil, Stats{SkippedPartial: 1}},
		{"sliding window group", []engine.Event{engine.BlockStored{EngineHashes: []uint64{1}, Tokens: tk[:4], BlockSize: 4,
			Medium: engine.MediumGPU, GroupIdx: 1, SpecKind: "sliding_window"}}, nil, Stats{SkippedGroup: 1}},
		{"orphan chain", []engine.Event{stored([]uint64{2}, ptr(1), tk[4:], 4)}, nil, Stats{SkippedOrphan: 1}},
		{"opaque multimodal", []engine.Event{engine.BlockStored{EngineHashes: []uint64{1}, Tokens: tk[:4], BlockSize: 4, Opaque: true}},
			nil, Stats{SkippedOpaque: 1}},
		{"numeric lora only", []engine.Event{engine.BlockStored{EngineHashes: []uint64{1}, Tokens: tk[:4], BlockSize: 4, LoRAID: 3}},
			nil, Stats{SkippedLoRA: 1}},
		{"fewer tokens than hashes", []engine.Event{stored([]uint64{1, 2}, nil, tk[:6], 4)}, []kvblock.Hash{h0},
			Stats{Stored: 1, SkippedPartial: 1}},
		{"unknown removal", []engine.Event{engine.BlockRemoved{EngineHashes: []uint64{77}, Medium: engine.MediumGPU}},
			nil, Stats{RemovedUnknown: 1}},
		{"removal of another group", []engine.Event{stored([]uint64{1}, nil, tk[:4], 4),
			engine.BlockRemoved{EngineHashes: []uint64{1}, Medium: engine.MediumGPU, GroupIdx: 1}},
			[]kvblock.Hash{h0}, Stats{Stored: 1, RemovedUnknown: 1}},
		{"removal", []engine.Event{stored([]uint64{1}, nil, tk[:4], 4),
			engine.BlockRemoved{EngineHashes: []uint64{1}, Medium: engine.MediumGPU}},
			nil, Stats{Stored: 1, Removed: 1}},
		{"cleared", []engine.Event{stored([]uint64{1}, nil, tk[:4], 4), engine.AllBlocksCleared{}},
			nil, Stats{Stored: 1, Clears: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSet(t, 4)
			s.Apply(batch(0, tc.events...))
			if diff := cmp.Diff(tc.want, sorted(s.Blocks(nil, ""))); diff != "" {
				t.Errorf("Blocks mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.stats, s.Stats()); diff != "" {
				t.Errorf("Stats mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReferenceCountsAcrossRanksAndMedia(t *testing.T) {
	s := newSet(t, 4)
	tk := toks(0, 4)
	h := kvblock.Next(kvblock.NewSeed(model, "", ""), tk)
	s.Apply(batch(0, stored([]uint64{1}, nil, tk, 4)))
	s.Apply(batch(1, stored([]uint64{500}, nil, tk, 4))) // another rank, another engine hash
	cpu := stored([]uint64{1}, nil, tk, 4)
	cpu.Medium = engine.MediumCPU
	s.Apply(batch(0, cpu))
	_, _ = s.Drain(nil)

	s.Apply(batch(0, engine.BlockRemoved{EngineHashes: []uint64{1}, Medium: engine.MediumGPU}))
	if !s.ContainsIn(h, engine.MediumGPU) {
		t.Fatal("rank 1 still holds the block on GPU")
	}
	s.ClearRank(1, false)
	if s.ContainsIn(h, engine.MediumGPU) || !s.ContainsIn(h, engine.MediumCPU) {
		t.Fatalf("after clearing rank 1: media %v, want [CPU]", s.Media(h))
	}
	changes, _ := s.Drain(nil)
	if diff := cmp.Diff([]Change{{Hash: h, Medium: engine.MediumGPU}}, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if s.LenIn(engine.MediumCPU) != 1 || s.LenIn(engine.MediumGPU) != 0 || s.Len() != 1 {
		t.Errorf("LenIn CPU %d GPU %d Len %d", s.LenIn(engine.MediumCPU), s.LenIn(engine.MediumGPU), s.Len())
	}
}

func TestIncompleteUntilEngineClearsOrRestarts(t *testing.T) {
	s := newSet(t, 4)
	s.Apply(batch(2, stored([]uint64{1}, nil, toks(0, 4), 4)))
	s.ClearRank(2, true)
	if !s.Incomplete() || s.Len() != 0 {
		t.Fatalf("Incomplete %v Len %d after an unfilled gap", s.Incomplete(), s.Len())
	}
	s.Apply(batch(2, engine.AllBlocksCleared{}))
	if s.Incomplete() {
		t.Error("still incomplete after AllBlocksCleared")
	}
	s.ClearRank(2, true)
	s.ClearRank(2, false)
	if s.Incomplete() {
		t.Error("still incomplete after a restart")
	}
}

func TestBlockSizeIsLearned(t *testing.T) {
	s := newSet(t, 0)
	s.Apply(batch(0, engine.BlockStored{EngineHashes: []uint64{1}, Tokens: toks(0, 8), BlockSize: 8, SpecKind: "mamba"}))
	if s.BlockSize() != 0 {
		t.Fatalf("learned %d from a mamba group", s.BlockSize())
	}
	s.Apply(batch(0, stored([]uint64{1}, nil, toks(0, 8), 8), stored([]uint64{2}, nil, toks(0, 16), 16)))
	if s.BlockSize() != 8 || s.Len() != 1 {
		t.Errorf("BlockSize %d Len %d, want 8 1", s.BlockSize(), s.Len())
	}
}

func TestDrainOverflow(t *testing.T) {
	s, err := New(Config{Model: model, BlockSize: 1, MaxPendingChanges: 3}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Apply(batch(0, stored([]uint64{1, 2, 3, 4}, nil, toks(0, 4), 1)))
	if c, overflow := s.Drain(nil); !overflow || len(c) != 0 {
		t.Fatalf("Drain = %v, %v; want overflow", c, overflow)
	}
	s.Apply(batch(0, engine.BlockRemoved{EngineHashes: []uint64{4}, Medium: engine.MediumGPU}))
	if c, overflow := s.Drain(nil); overflow || len(c) != 1 {
		t.Fatalf("Drain after overflow = %v, %v", c, overflow)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{BlockSize: -1, MaxPendingChanges: -1}).Validate(); err == nil {
		t.Fatal("Validate accepted a bad config")
	} else if got := err.Error(); !containsAll(got, "blockset.model", "blockset.block_size", "blockset.max_pending_changes") {
		t.Errorf("Validate = %q, want every problem", got)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// gathered returns the value of a metric series by name and label values.
func gathered(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for i, l := range m.GetLabel() {
				if i >= len(labels) || l.GetValue() != labels[i] {
					continue series
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{Model: model, BlockSize: 4}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	s.Apply(batch(0, stored([]uint64{1}, nil, toks(0, 4), 4), stored([]uint64{2}, ptr(9), toks(4, 4), 4)))
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"inferrail_sidecar_blockset_stored_blocks_total", nil, 1},
		{"inferrail_sidecar_blockset_skipped_blocks_total", []string{"orphan"}, 1},
		{"inferrail_sidecar_blockset_blocks", nil, 1},
		{"inferrail_sidecar_blockset_incomplete", nil, 0},
	} {
		if got := gathered(t, reg, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
