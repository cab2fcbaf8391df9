package summary

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/kvblock"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	err := Config{FalsePositiveRate: 2}.Validate()
	if err == nil {
		t.Fatal("zero config validated")
	}
	for _, want := range []string{"capacity", "false_positive_rate", "rebuild_removals", "rebuild_period", "max_delta_bytes"} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestRebuildTriggers(t *testing.T) {
	t.Run("removals", func(t *testing.T) {
		b, _ := newTestBuilder(t, func(c *Config) { c.RebuildRemovals = 0.25 })
		for h := range kvblock.Hash(100) {
			b.Add(h, MediumGPU)
		}
		e0, _ := b.Version()
		for h := range kvblock.Hash(20) {
			b.Remove(h, MediumGPU)
		}
		if b.RebuildDue() {
			t.Fatal("rebuild due at 20 removals of 80")
		}
		for h := kvblock.Hash(20); h < 30; h++ {
			b.Remove(h, MediumGPU)
		}
		if !b.RebuildDue() {
			t.Fatal("rebuild not due at 30 removals of 70")
		}
		if _, newEpoch := b.Flush(); !newEpoch {
			t.Fatal("Flush did not rebuild")
		}
		e1, s1 := b.Version()
		if e1 != e0+1 || s1 != 0 {
			t.Fatalf("version after rebuild (%d,%d), want (%d,0)", e1, s1, e0+1)
		}
		v := NewView()
		mustApply(t, v, b.EncodeSnapshot())
		removedSeen := 0
		for h := range kvblock.Hash(30) {
			if v.Contains(h, MediumGPU) {
				removedSeen++
			}
		}
		if removedSeen > 2 {
			t.Errorf("%d of 30 removed blocks still in the rebuilt filter", removedSeen)
		}
		for h := kvblock.Hash(30); h < 100; h++ {
			if !v.Contains(h, MediumGPU) {
				t.Fatalf("held block %d lost in rebuild", h)
			}
		}
	})
	t.Run("period", func(t *testing.T) {
		b, clk := newTestBuilder(t, func(c *Config) { c.RebuildPeriod = time.Minute })
		b.Add(1, MediumGPU)
		if b.RebuildDue() {
			t.Fatal("rebuild due at once")
		}
		clk.t = clk.t.Add(time.Minute)
		if !b.RebuildDue() {
			t.Fatal("rebuild not due after the period")
		}
	})
	t.Run("outgrown", func(t *testing.T) {
		b, _ := newTestBuilder(t, func(c *Config) { c.Capacity = 100 })
		for h := range kvblock.Hash(101) {
			b.Add(h, MediumCPU)
		}
		if !b.RebuildDue() {
			t.Fatal("rebuild not due past capacity")
		}
		b.Rebuild()
		if b.RebuildDue() {
			t.Fatal("rebuild still due after growing the filter")
		}
	})
	t.Run("reset", func(t *testing.T) {
		b, _ := newTestBuilder(t, nil)
		b.Add(1, MediumGPU)
		b.Reset(map[Medium][]kvblock.Hash{MediumCPU: {7, 8}})
		if b.Len(MediumGPU) != 0 || b.Len(MediumCPU) != 2 {
			t.Fatalf("Len after Reset = %d/%d", b.Len(MediumGPU), b.Len(MediumCPU))
		}
		v := NewView()
		mustApply(t, v, b.EncodeSnapshot())
		if !v.Contains(7, MediumCPU) || v.Contains(1, MediumGPU) {
			t.Fatal("snapshot after Reset does not match the new set")
		}
	})
}

func TestFlushRespectsPacketBudget(t *testing.T) {
	b, _ := newTestBuilder(t, func(c *Config) { c.MaxDeltaBytes, c.RebuildRemovals = 1200, 10 })
	r := rand.New(rand.NewPCG(13, 14))
	b.Add(0, MediumCPU)
	b.Rebuild()
	// Additions and removals interleave, so runs are short and each costs a
	// header.
	var want []Change
	for range 1000 {
		h := kvblock.Hash(r.Uint64())
		c := Change{Medium: Medium(r.IntN(2)), Key: KeyOf(h)}
		b.Add(h, c.Medium)
		want = append(want, c)
		if r.IntN(3) == 0 {
			b.Remove(h, c.Medium)
			c.Removed = true
			want = append(want, c)
		}
	}
	deltas, _ := b.Flush()
	var got []Change
	for i, raw := range deltas {
		if len(raw) > 1200 {
			t.Errorf("delta %d is %d bytes > 1200", i, len(raw))
		}
		d, err := UnmarshalDelta(raw)
		if err != nil {
			t.Fatal(err)
		}
		if d.Seq != uint64(i+1) {
			t.Errorf("delta %d has seq %d", i, d.Seq)
		}
		got = append(got, d.Changes...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("deltas' changes, in order (-want +got):\n%s", diff)
	}
	if d, _ := b.Flush(); d != nil {
		t.Fatalf("second Flush returned %d deltas", len(d))
	}
}

func TestNewMediumStartsEpoch(t *testing.T) {
	b, _ := newTestBuilder(t, nil)
	v := NewView()
	mustApply(t, v, b.EncodeSnapshot())
	b.Add(1, MediumGPU)
	d, newEpoch := b.Flush()
	if newEpoch {
		t.Fatal("GPU additions started an epoch")
	}
	mustApply(t, v, d...)
	b.Add(2, MediumCPU)
	if _, newEpoch := b.Flush(); !newEpoch {
		t.Fatal("a new medium did not start an epoch")
	}
	mustApply(t, v, b.EncodeSnapshot())
	if !v.Contains(1, MediumGPU) || !v.Contains(2, MediumCPU) {
		t.Fatal("view misses blocks after the new epoch")
	}
}

// Prefix counts leading blocks of the exact set only: a block the filter
// still holds after its removal does not count, and the first missing block
// ends the prefix.
func TestBuilderPrefix(t *testing.T) {
	b, _ := newTestBuilder(t, nil)
	hs := []kvblock.Hash{11, 12, 13, 14}
	for _, h := range hs {
		b.Add(h, MediumGPU)
	}
	b.Add(99, MediumCPU)
	cases := []struct {
		name string
		hs   []kvblock.Hash
		m    Medium
		want int
	}{
		{"all held", hs, MediumGPU, 4},
		{"empty prompt", nil, MediumGPU, 0},
		{"first missing", []kvblock.Hash{10, 11, 12}, MediumGPU, 0},
		{"held after a gap", []kvblock.Hash{11, 12, 50, 14}, MediumGPU, 2},
		{"other medium", hs, MediumCPU, 0},
		{"unknown medium", hs, Medium(MaxMedia), 0},
	}
	for _, c := range cases {
		if got := b.Prefix(c.hs, c.m); got != c.want {
			t.Errorf("%s: Prefix = %d, want %d", c.name, got, c.want)
		}
	}
	b.Remove(13, MediumGPU)
	if got := b.Prefix(hs, MediumGPU); got != 2 {
		t.Errorf("after removing the third block: Prefix = %d, want 2", got)
	}
}

// collides reports whether another held GPU block shares h's key (test aid).
func (b *Builder) collides(h kvblock.Hash) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.media[MediumGPU].keys[KeyOf(h)] > 0
}
