package sidecar

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/prometheus/client_golang/prometheus"
)

// fakeExact is an exactSource whose state the test sets.
type fakeExact struct {
	mu   sync.Mutex
	st   exactStatus
	sets map[string][]kvblock.Hash
	sink blockSink
	// blockSize and blocksPerRank are the last SetEngine's.
	blockSize, blocksPerRank int
}

func (f *fakeExact) Run(ctx context.Context) error { <-ctx.Done(); return nil }

func (f *fakeExact) Status() exactStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeExact) Resync(fn func(map[string][]kvblock.Hash, bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.sets, f.st.Complete)
}

func (f *fakeExact) SetEngine(blockSize, blocksPerRank int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blockSize, f.blocksPerRank = blockSize, blocksPerRank
}

func (f *fakeExact) Sets() map[string][]kvblock.Hash {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sets
}

// store adds blocks as the pipeline would: to its set, then to the sink.
func (f *fakeExact) store(medium string, hs ...kvblock.Hash) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets[medium] = append(f.sets[medium], hs...)
	f.st.Batches++
	f.st.Blocks += len(hs)
	f.sink.blocksAdded(hs, medium)
}

type controllerRig struct {
	m      *metrics
	feed   *summaryFeed
	approx *approxSet
	exact  *fakeExact
	ctl    *controller
	now    time.Time
}

func newControllerRig(t *testing.T, withEvents bool, capacity int) *controllerRig {
	t.Helper()
	r := &controllerRig{now: time.Unix(1000, 0)}
	r.m = newMetrics(prometheus.NewRegistry(), nil)
	cfg := DefaultConfig().Summary
	cfg.Capacity = capacity
	r.feed = newSummaryFeed(cfg, r.m)
	r.approx = newApproxSet(1000, r.feed.sink(sourceApprox), nil)
	var ex exactSource
	if withEvents {
		r.exact = &fakeExact{sets: map[string][]kvblock.Hash{}, sink: r.feed.sink(sourceExact)}
		ex = r.exact
	}
	r.ctl = newController(10*time.Second, r.feed, r.approx, ex, slog.New(slog.DiscardHandler), r.m)
	r.ctl.now = func() time.Time { return r.now }
	return r
}

// view decodes the feed's current snapshot as a balancer would.
func (r *controllerRig) view(t *testing.T) *summary.View {
	t.Helper()
	v := summary.NewView()
	snap := r.feed.EncodeSnapshot()
	if snap == nil {
		t.Fatal("no summary snapshot")
	}
	if err := v.Apply(snap); err != nil {
		t.Fatalf("apply snapshot: %v", err)
	}
	return v
}

func TestControllerEventsDisabled(t *testing.T) {
	r := newControllerRig(t, false, 0)
	if got := r.ctl.modeName(); got != modeDisabled {
		t.Fatalf("mode %q, want disabled", got)
	}
	r.approx.observePrompt([][]kvblock.Hash{{1, 2, 3}})
	if in := r.feed.info(); in.Built {
		t.Fatalf("summary built before the capacity is known: %+v", in)
	}
	r.ctl.engineSample(engine.Load{NumGPUBlocks: 500, BlockSize: 16})
	in := r.feed.info()
	if !in.Built || in.Source != sourceApprox || in.Complete || in.Capacity != 500 || in.Blocks["gpu"] != 3 {
		t.Fatalf("after capacity: %+v, want built approx incomplete summary of 3 blocks, capacity 500", in)
	}
	r.approx.observePrompt([][]kvblock.Hash{{1, 2, 4}})
	r.feed.Flush() // as the gossip node does every tick
	v := r.view(t)
	for _, h := range []kvblock.Hash{1, 2, 3, 4} {
		if !v.Contains(h, summary.MediumGPU) {
			t.Errorf("summary lacks block %d", h)
		}
	}
	if got := metricValue(t, r.m.eventsMode.WithLabelValues(modeDisabled)); got != 1 {
		t.Errorf("events_mode{disabled} = %v, want 1", got)
	}
}

func TestControllerSilentEngine(t *testing.T) {
	r := newControllerRig(t, true, 100)
	r.ctl.tick()
	r.now = r.now.Add(time.Minute)
	r.ctl.tick()
	if got := r.ctl.modeName(); got != modeWaiting {
		t.Fatalf("idle engine: mode %q, want waiting (no traffic, no verdict)", got)
	}
	r.approx.observePrompt([][]kvblock.Hash{{7, 8}})
	r.ctl.tick() // traffic seen
	r.now = r.now.Add(9 * time.Second)
	r.ctl.tick()
	if got := r.ctl.modeName(); got != modeWaiting {
		t.Fatalf("within grace: mode %q, want waiting", got)
	}
	r.now = r.now.Add(time.Second)
	r.ctl.tick()
	if got := r.ctl.modeName(); got != modeSilent {
		t.Fatalf("after grace: mode %q, want silent", got)
	}
	if in := r.feed.info(); in.Source != sourceApprox || in.Blocks["gpu"] != 2 {
		t.Errorf("silent summary %+v, want the approximate set", in)
	}
	// Events that show up late take over.
	r.exact.store(MediumGPU, 100, 101, 102)
	r.ctl.tick()
	if got := r.ctl.modeName(); got != modeLive {
		t.Fatalf("mode %q, want live", got)
	}
	if in := r.feed.info(); in.Source != sourceExact || in.Blocks["gpu"] != 3 {
		t.Errorf("live summary %+v, want the exact set of 3", in)
	}
	r.approx.observePrompt([][]kvblock.Hash{{9}})
	if r.approx.Len() != 0 {
		t.Errorf("approx set still records prompts while events are live")
	}
}

func TestControllerLiveEvents(t *testing.T) {
	r := newControllerRig(t, true, 100)
	r.approx.observePrompt([][]kvblock.Hash{{1}}) // before the first batch
	r.exact.st.Complete = true
	r.exact.store(MediumGPU, 10, 11)
	r.exact.store(engine.MediumCPU, 10)
	r.ctl.tick()
	if got := r.ctl.modeName(); got != modeLive {
		t.Fatalf("mode %q, want live", got)
	}
	in := r.feed.info()
	if in.Source != sourceExact || !in.Complete || in.Blocks["gpu"] != 2 || in.Blocks["cpu"] != 1 {
		t.Fatalf("summary %+v, want complete exact 2 gpu + 1 cpu", in)
	}
	// Changes after the switch flow as deltas.
	epoch, _ := r.feed.Version()
	if _, newEpoch := r.feed.Flush(); !newEpoch {
		t.Errorf("first Flush after a reset: newEpoch false, want true")
	}
	r.exact.store(MediumGPU, 12)
	if deltas, newEpoch := r.feed.Flush(); newEpoch || len(deltas) != 1 {
		t.Errorf("Flush after one addition: %d deltas, newEpoch %v; want 1 delta", len(deltas), newEpoch)
	}
	if deltas, newEpoch := r.feed.Flush(); newEpoch || len(deltas) != 0 {
		t.Errorf("idle Flush: %d deltas, newEpoch %v; want none", len(deltas), newEpoch)
	}
	if e, _ := r.feed.Version(); e != epoch {
		t.Errorf("epoch moved from %d to %d without a rebuild", epoch, e)
	}
	v := r.view(t)
	for _, h := range []kvblock.Hash{10, 11, 12} {
		if !v.Contains(h, summary.MediumGPU) {
			t.Errorf("summary lacks block %d", h)
		}
	}
	if v.Contains(1, summary.MediumGPU) {
		t.Errorf("approximate block survived the switch to events")
	}
	// An unrecovered gap marks the summary incomplete.
	r.exact.mu.Lock()
	r.exact.st.Complete = false
	r.exact.mu.Unlock()
	r.ctl.tick()
	if in := r.feed.info(); in.Complete {
		t.Errorf("summary complete after a gap")
	}
	if got := metricValue(t, r.m.summaryComplete); got != 0 {
		t.Errorf("summary_complete = %v, want 0", got)
	}
}

func TestMediumOf(t *testing.T) {
	for in, want := range map[string]summary.Medium{"": summary.MediumGPU, "GPU": summary.MediumGPU, "cpu": summary.MediumCPU,
		"CPU_PINNED": summary.MediumCPU, "DISK": 2, "EXTERNAL": 3} {
		if got, ok := mediumOf(in); !ok || got != want {
			t.Errorf("mediumOf(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
}

func TestControllerCapacityUnreported(t *testing.T) {
	r := newControllerRig(t, false, 0)
	r.ctl.engineSample(engine.Load{Running: 1}) // a readable page without cache_config_info
	if in := r.feed.info(); !in.Built || in.Capacity != defaultCapacity {
		t.Errorf("summary %+v, want one built for the default capacity %d", in, defaultCapacity)
	}
	r.ctl.engineSample(engine.Load{NumGPUBlocks: 1000}) // reported later
	if in := r.feed.info(); in.Capacity != 1000 {
		t.Errorf("capacity %d after the engine reported 1000", in.Capacity)
	}
}

// TestControllerSilentWithoutTokenizer: prompts that cannot be tokenized
// still count as traffic for the silent verdict.
func TestControllerSilentWithoutTokenizer(t *testing.T) {
	r := newControllerRig(t, true, 100)
	var prompts int64
	r.ctl.traffic = func() int64 { return prompts }
	r.ctl.tick()
	r.now = r.now.Add(time.Minute)
	r.ctl.tick()
	if got := r.ctl.modeName(); got != modeWaiting {
		t.Fatalf("no traffic: mode %q, want waiting", got)
	}
	prompts = 1
	r.ctl.tick()
	r.now = r.now.Add(10 * time.Second)
	r.ctl.tick()
	if got := r.ctl.modeName(); got != modeSilent {
		t.Fatalf("mode %q, want silent", got)
	}
}

// TestControllerEngineRestartDropsApprox: without events, an engine whose
// counters go back restarted with an empty cache.
func TestControllerEngineRestartDropsApprox(t *testing.T) {
	r := newControllerRig(t, false, 100)
	r.ctl.engineSample(engine.Load{PromptTokensTotal: 500, GenerationTokensTotal: 100})
	r.approx.observePrompt([][]kvblock.Hash{{1, 2, 3}})
	r.ctl.engineSample(engine.Load{PromptTokensTotal: 900, GenerationTokensTotal: 200})
	if r.approx.Len() != 3 {
		t.Fatalf("approx set dropped while the counters grew")
	}
	epoch, _ := r.feed.Version()
	r.ctl.engineSample(engine.Load{PromptTokensTotal: 10})
	if r.approx.Len() != 0 {
		t.Errorf("approx set kept %d blocks after the engine restarted", r.approx.Len())
	}
	in := r.feed.info()
	if in.Blocks["gpu"] != 0 || in.Epoch == epoch {
		t.Errorf("summary %+v after the restart, want a new empty epoch", in)
	}
	if v := metricValue(t, r.m.engineRestarts); v != 1 {
		t.Errorf("engine restarts = %v, want 1", v)
	}
}

// The engine's block size and its capacity per data-parallel engine go to
// the exact set on every readable scrape.
func TestEngineSampleBoundsTheExactSet(t *testing.T) {
	r := newControllerRig(t, true, 0)
	r.ctl.engineSample(engine.Load{NumGPUBlocks: 27501, Engines: 2, BlockSize: 16})
	r.exact.mu.Lock()
	bs, per := r.exact.blockSize, r.exact.blocksPerRank
	r.exact.mu.Unlock()
	if bs != 16 || per != 13751 {
		t.Errorf("SetEngine(%d, %d), want (16, 13751)", bs, per)
	}
	r.ctl.engineSample(engine.Load{Running: 1}) // a page without cache_config_info: no bound
	r.exact.mu.Lock()
	bs, per = r.exact.blockSize, r.exact.blocksPerRank
	r.exact.mu.Unlock()
	if bs != 0 || per != 0 {
		t.Errorf("SetEngine(%d, %d), want (0, 0)", bs, per)
	}
}
