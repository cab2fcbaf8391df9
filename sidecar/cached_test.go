package sidecar

import (
	"testing"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/prometheus/client_golang/prometheus"
)

// The data path's cached tokens come from the active block set: leading
// blocks of each prompt held on the GPU, in tokens, and nothing before the
// first summary or after the blocks are removed.
func TestSidecarCachedTokens(t *testing.T) {
	s := &Sidecar{feed: newSummaryFeed(DefaultConfig().Summary, newMetrics(prometheus.NewRegistry(), nil))}
	s.blockSize.Store(16)
	hs := []kvblock.Hash{1, 2, 3, 4}
	if got := s.cachedTokens([][]kvblock.Hash{hs}); got != 0 {
		t.Fatalf("before any summary: %d cached tokens, want 0", got)
	}
	if ok, err := s.feed.reset(sourceExact, map[string][]kvblock.Hash{"GPU": hs[:3], "CPU": {4}}, 1000, true, "test"); !ok || err != nil {
		t.Fatalf("reset = %v, %v", ok, err)
	}
	// Three leading blocks of the first prompt (the CPU block does not
	// count), two of the second, none of a prompt starting elsewhere.
	prompts := [][]kvblock.Hash{hs, hs[:2], {9, 1}}
	if got, want := s.cachedTokens(prompts), (3+2)*16; got != want {
		t.Errorf("cached tokens = %d, want %d", got, want)
	}
	s.feed.sink(sourceExact).blocksRemoved([]kvblock.Hash{2}, "GPU")
	if got, want := s.cachedTokens(prompts), (1+1)*16; got != want {
		t.Errorf("after removing the second block: cached tokens = %d, want %d", got, want)
	}
}
