package sidecar

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// exactStatus is the state of the KV-event pipeline.
type exactStatus struct {
	// Batches is the number of event batches applied so far.
	Batches uint64
	// Complete reports whether the exact set is known to be complete: false
	// after a gap that replay could not fill, until the set is rebuilt.
	Complete bool
	// Blocks is the number of blocks in the exact set, GPUBlocks the
	// number held in GPU memory.
	Blocks, GPUBlocks int
	// ResyncNeeded reports that changes were lost (the change feed
	// overflowed): the summary must be rebuilt from the whole set.
	ResyncNeeded bool
}

// exactSource is the KV-event pipeline: subscriber, decoder and exact block
// set, sending every change to the sink it was built with.
type exactSource interface {
	// Run subscribes and applies events until ctx is done.
	Run(ctx context.Context) error
	// Status returns the pipeline's state. It must not block.
	Status() exactStatus
	// Resync calls fn with the whole exact set (router hashes per medium)
	// between two changes, so the summary rebuilt in fn misses no change and
	// doubles none. fn may run before Resync returns or later, on the
	// goroutine that applies changes; it must not call back into the source.
	Resync(fn func(sets map[string][]kvblock.Hash, complete bool))
	// Sets returns a copy of the whole exact set per medium, for debugging; unlike
	// Resync it does not count as a summary rebuild.
	Sets() map[string][]kvblock.Hash
	// SetEngine passes what the engine's metrics page says: its block size
	// (0 unknown), authoritative over the one the set started with, and its
	// GPU blocks per data-parallel engine (0 unknown), which bounds each
	// rank's set. It must not block for long.
	SetEngine(blockSize, blocksPerRank int)
}

// controller owns the sidecar's state machine: which block set feeds the
// summary (exact from events, or approximate from the data path), the
// engine's capacity, and the load report. Its methods run on one goroutine.
type controller struct {
	grace time.Duration
	log   *slog.Logger
	m     *metrics
	now   func() time.Time

	feed   *summaryFeed
	approx *approxSet
	exact  exactSource // nil when events are disabled

	mode           string
	modeV          atomic.Pointer[string] // mode, for other goroutines
	firstTrafficAt time.Time              // first prompt seen while waiting for events
	// traffic counts the prompts the engine accepted through the data path
	// (whether or not they could be tokenized); nil counts the approximate
	// set's blocks instead.
	traffic     func() int64
	capacity    int
	tokensTotal float64 // engine's prompt + generation tokens at the last scrape; -1 before
}

func newController(grace time.Duration, feed *summaryFeed, approx *approxSet, exact exactSource, log *slog.Logger, m *metrics) *controller {
	c := &controller{grace: grace, log: log, m: m, now: time.Now, feed: feed, approx: approx, exact: exact, tokensTotal: -1}
	if exact == nil {
		c.setMode(modeDisabled)
		log.Warn("KV events disabled (no kv_events.endpoint): keeping an approximate block set from data-path prompts")
	} else {
		c.setMode(modeWaiting)
	}
	c.resetApprox("start")
	return c
}

// heldBlocks returns the blocks the engine holds in GPU memory by the set
// the summary is built from (the exact set while events are live, else the
// approximate one); safe from any goroutine.
func (c *controller) heldBlocks() int64 {
	if c.modeName() == modeLive && c.exact != nil {
		return int64(c.exact.Status().GPUBlocks)
	}
	return int64(c.approx.Len())
}

// modeName returns the current mode; safe from any goroutine.
func (c *controller) modeName() string {
	if p := c.modeV.Load(); p != nil {
		return *p
	}
	return ""
}

func (c *controller) setMode(mode string) {
	c.mode = mode
	c.modeV.Store(&mode)
	for _, m := range eventsModes {
		v := 0.0
		if m == mode {
			v = 1
		}
		c.m.eventsMode.WithLabelValues(m).Set(v)
	}
}

// resetApprox makes the approximate set the summary's source.
func (c *controller) resetApprox(reason string) {
	capacity := c.capacity
	c.approx.withBlocks(func(hs []kvblock.Hash) {
		if _, err := c.feed.reset(sourceApprox, map[string][]kvblock.Hash{MediumGPU: hs}, capacity, false, reason); err != nil {
			c.log.Error("summary rebuild failed", "err", err)
		}
	})
}

// resetExact makes the exact set the summary's source (asynchronously, on
// the pipeline's goroutine).
func (c *controller) resetExact(reason string) {
	capacity := c.capacity
	c.exact.Resync(func(sets map[string][]kvblock.Hash, complete bool) {
		if _, err := c.feed.reset(sourceExact, sets, capacity, complete, reason); err != nil {
			c.log.Error("summary rebuild failed", "err", err)
		}
	})
}

// defaultCapacity sizes summaries and the approximate set when the engine's
// page does not report its capacity (and summary.capacity is unset): about
// one H100's worth of 16-token blocks for an 8B model.
const defaultCapacity = 32768

// engineSample takes a readable scrape's block size and capacity into
// account.
func (c *controller) engineSample(l engine.Load) {
	c.detectRestart(l)
	if c.exact != nil {
		perRank := 0
		if l.NumGPUBlocks > 0 {
			engines := max(l.Engines, 1)
			perRank = (l.NumGPUBlocks + engines - 1) / engines
		}
		c.exact.SetEngine(l.BlockSize, perRank)
	}
	n := l.NumGPUBlocks
	if n <= 0 {
		if c.capacity != 0 {
			return
		}
		n = defaultCapacity
		c.log.Warn("the engine's metrics page does not report its KV capacity: sizing for the default; set summary.capacity",
			"blocks", n)
	}
	if n == c.capacity {
		return
	}
	first := c.capacity == 0
	c.capacity = n
	c.approx.setCapacity(c.capacity)
	if first {
		c.log.Info("engine capacity known", "blocks", c.capacity, "block_size", l.BlockSize)
	}
	if c.mode == modeLive {
		c.resetExact("capacity")
	} else {
		c.resetApprox("capacity")
	}
}

// sawTraffic reports whether the engine accepted a prompt through the data
// path: a publishing engine would have sent a batch for it.
func (c *controller) sawTraffic() bool {
	if c.traffic != nil {
		return c.traffic() > 0
	}
	return c.approx.Len() > 0
}

// detectRestart notices an engine restart from its cumulative counters going
// back. The events path sees restarts by their sequence numbers; without
// events this is the only sign that the engine's cache is empty again, so the
// approximate set is dropped.
func (c *controller) detectRestart(l engine.Load) {
	total := l.PromptTokensTotal + l.GenerationTokensTotal
	prev := c.tokensTotal
	c.tokensTotal = total
	if prev < 0 || total >= prev {
		return
	}
	c.m.engineRestarts.Inc()
	if c.mode == modeLive {
		c.log.Warn("engine counters went back: the engine restarted", "tokens_before", prev, "tokens_now", total)
		return
	}
	c.log.Warn("engine counters went back: the engine restarted with an empty cache; dropping the approximate block set",
		"tokens_before", prev, "tokens_now", total)
	c.approx.clear()
	c.resetApprox("engine_restart")
}

// tick advances the events state machine.
func (c *controller) tick() {
	if c.exact == nil {
		c.m.blocksHeld.WithLabelValues(sourceApprox).Set(float64(c.approx.Len()))
		return
	}
	st := c.exact.Status()
	c.m.blocksHeld.WithLabelValues(sourceExact).Set(float64(st.Blocks))
	c.m.blocksHeld.WithLabelValues(sourceApprox).Set(float64(c.approx.Len()))
	switch c.mode {
	case modeWaiting, modeSilent:
		if st.Batches > 0 {
			if c.mode == modeSilent {
				c.log.Info("KV events arrived after all: switching the summary to the exact block set")
			} else {
				c.log.Info("KV events live")
			}
			c.setMode(modeLive)
			c.resetExact("source")
			c.approx.disable()
			return
		}
		if c.mode == modeWaiting && c.sawTraffic() {
			if c.firstTrafficAt.IsZero() {
				c.firstTrafficAt = c.now()
			} else if c.now().Sub(c.firstTrafficAt) >= c.grace {
				c.log.Warn("the engine publishes no KV events: prompts went through the data path but no event batch arrived; keeping an approximate block set",
					"grace", c.grace)
				c.setMode(modeSilent)
			}
		}
	case modeLive:
		if st.ResyncNeeded {
			c.resetExact("overflow")
		}
		c.feed.setComplete(sourceExact, st.Complete)
	}
}
