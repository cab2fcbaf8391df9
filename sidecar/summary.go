package sidecar

import (
	"fmt"
	"sync"

	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// Block-set sources the summary can be built from.
const (
	sourceExact  = "exact"  // the engine's KV events
	sourceApprox = "approx" // the data path's prompts
)

// SummaryInfo is the body of GET /v1/summary.
type SummaryInfo struct {
	// Built reports whether a summary exists yet (it waits for the engine's
	// capacity unless summary.capacity is set).
	Built bool `json:"built"`
	// Source is "exact" (KV events) or "approx" (data-path prompts).
	Source string `json:"source"`
	// Complete reports whether the summary covers a complete exact block
	// set: false while approximate, or after an event gap that replay could
	// not fill until the set is rebuilt.
	Complete bool `json:"complete"`
	// Epoch and Seq version the summary: a new epoch is a full rebuild,
	// each delta within it advances Seq.
	Epoch uint64 `json:"epoch"`
	Seq   uint64 `json:"seq"`
	// Blocks counts the blocks summarized, per medium.
	Blocks map[string]int `json:"blocks"`
	// Bytes is the size of the encoded snapshot.
	Bytes int `json:"bytes"`
	// Capacity is the number of blocks each filter is sized for (at least).
	Capacity int `json:"capacity"`
	// FalsePositiveRate is the target rate of each filter.
	FalsePositiveRate float64 `json:"fp_rate"`
}

// summaryFeed turns the active block set's changes into the summary builder
// that the gossip node disseminates. Two sources feed it (exact and approx);
// only the active one's changes are applied, and switching sources rebuilds
// the summary from the new source's whole set.
type summaryFeed struct {
	cfg SummaryConfig
	m   *metrics

	mu       sync.Mutex // protects the fields below
	b        *summary.Builder
	capacity int
	active   string
	complete bool
	// newEpoch is set by a reset: the next Flush reports a new epoch so the
	// gossip node sends the snapshot at once.
	newEpoch bool
}

func newSummaryFeed(cfg SummaryConfig, m *metrics) *summaryFeed {
	return &summaryFeed{cfg: cfg, m: m}
}

// builder returns the current builder, or nil before the first build. The
// gossip node reads summaries through it.
func (f *summaryFeed) builder() *summary.Builder {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.b
}

// mediumOf maps an engine medium onto a summary medium; ok is false for a
// medium the summary has no filter for.
func mediumOf(m string) (summary.Medium, bool) {
	switch engine.NormalizeMedium(m) {
	case engine.MediumGPU:
		return summary.MediumGPU, true
	case engine.MediumCPU:
		return summary.MediumCPU, true
	case engine.MediumDisk:
		return summary.Medium(2), true
	default:
		return summary.Medium(3), true
	}
}

// sink returns the change feed of one source.
func (f *summaryFeed) sink(source string) blockSink { return sourceSink{f, source} }

type sourceSink struct {
	f      *summaryFeed
	source string
}

func (s sourceSink) blocksAdded(hs []kvblock.Hash, medium string) {
	s.f.apply(s.source, hs, medium, true)
}

func (s sourceSink) blocksRemoved(hs []kvblock.Hash, medium string) {
	s.f.apply(s.source, hs, medium, false)
}

func (f *summaryFeed) apply(source string, hs []kvblock.Hash, medium string, add bool) {
	md, ok := mediumOf(medium)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.b == nil || f.active != source {
		return
	}
	for _, h := range hs {
		if add {
			f.b.Add(h, md)
		} else {
			f.b.Remove(h, md)
		}
	}
}

// reset makes source the active one and rebuilds the summary from its whole
// set, as a new epoch. capacity is the engine's capacity in blocks (0:
// unknown); the summary is built only once a capacity is known (from the
// config or the engine). It reports whether a summary exists afterwards.
func (f *summaryFeed) reset(source string, sets map[string][]kvblock.Hash, capacity int, complete bool, reason string) (bool, error) {
	if f.cfg.Capacity > 0 {
		capacity = f.cfg.Capacity
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active, f.complete = source, complete
	f.setCompleteLocked()
	if capacity <= 0 {
		capacity = f.capacity
	}
	if capacity <= 0 {
		return false, nil
	}
	if f.b == nil || capacity != f.capacity {
		b, err := summary.NewBuilder(summary.Config{
			Capacity:          uint(capacity),
			FalsePositiveRate: f.cfg.FalsePositiveRate,
			RebuildRemovals:   f.cfg.RebuildRemovedFraction,
			RebuildPeriod:     f.cfg.RebuildPeriod,
			MaxDeltaBytes:     summary.DefaultConfig().MaxDeltaBytes,
		}, nil)
		if err != nil {
			return false, fmt.Errorf("summary builder: %w", err)
		}
		f.b, f.capacity = b, capacity
	}
	bySummary := make(map[summary.Medium][]kvblock.Hash, len(sets))
	for m, hs := range sets {
		if md, ok := mediumOf(m); ok {
			bySummary[md] = append(bySummary[md], hs...)
		}
	}
	f.b.Reset(bySummary)
	f.newEpoch = true
	f.m.summaryRebuilds.WithLabelValues(reason).Inc()
	return true, nil
}

// setComplete records whether the active exact set is complete.
func (f *summaryFeed) setComplete(source string, complete bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == source {
		f.complete = complete
		f.setCompleteLocked()
	}
}

func (f *summaryFeed) setCompleteLocked() {
	v := 0.0
	if f.complete && f.active == sourceExact {
		v = 1
	}
	f.m.summaryComplete.Set(v)
}

// info describes the current summary and updates its gauges.
func (f *summaryFeed) info() SummaryInfo {
	f.mu.Lock()
	b, source, complete, capacity := f.b, f.active, f.complete, f.capacity
	f.mu.Unlock()
	in := SummaryInfo{Source: source, Complete: complete && source == sourceExact, FalsePositiveRate: f.cfg.FalsePositiveRate, Blocks: map[string]int{}}
	if b == nil {
		return in
	}
	in.Built, in.Capacity = true, capacity
	in.Epoch, in.Seq = b.Version()
	for _, m := range []summary.Medium{summary.MediumGPU, summary.MediumCPU, 2, 3} {
		if n := b.Len(m); n > 0 || m == summary.MediumGPU {
			in.Blocks[m.String()] = n
		}
	}
	in.Bytes = len(b.EncodeSnapshot())
	f.m.summaryEpoch.Set(float64(in.Epoch))
	f.m.summarySeq.Set(float64(in.Seq))
	f.m.summaryBytes.Set(float64(in.Bytes))
	return in
}

// Flush implements gossip.SummarySource: the deltas to send now, or
// newEpoch when the summary was rebuilt (the node then sends a snapshot).
func (f *summaryFeed) Flush() (deltas [][]byte, newEpoch bool) {
	f.mu.Lock()
	b, reset := f.b, f.newEpoch
	f.newEpoch = false
	f.mu.Unlock()
	if b == nil {
		return nil, false
	}
	deltas, newEpoch = b.Flush()
	if reset && !newEpoch {
		// The reset's new epoch includes every pending delta.
		return nil, true
	}
	if newEpoch {
		f.m.summaryRebuilds.WithLabelValues("threshold").Inc()
	}
	return deltas, newEpoch
}

// EncodeSnapshot implements gossip.SummarySource.
func (f *summaryFeed) EncodeSnapshot() []byte {
	if b := f.builder(); b != nil {
		return b.EncodeSnapshot()
	}
	return nil
}

// Version implements gossip.SummarySource; (0, 0) before the first build.
func (f *summaryFeed) Version() (epoch, seq uint64) {
	if b := f.builder(); b != nil {
		return b.Version()
	}
	return 0, 0
}
