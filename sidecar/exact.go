package sidecar

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/blockset"
	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/prometheus/client_golang/prometheus"
)

// exactMedia are the media the exact set is enumerated by for a summary
// rebuild (blockset interns any other medium as one more, which the summary
// files with the external tiers).
var exactMedia = []string{engine.MediumGPU, engine.MediumCPU, engine.MediumDisk, engine.MediumStorage, engine.MediumExternal}

// exactPipeline is the KV-event pipeline: a subscriber per data-parallel
// rank delivers decoded batches, which are applied to the exact block set;
// the set's change feed goes to the summary sink. Applying a batch, draining
// its changes and a Resync are serialized by mu, so a summary rebuilt in
// Resync misses no change and doubles none.
type exactPipeline struct {
	cfg       Config
	waitModel func(context.Context) (string, error)
	sink      blockSink
	log       *slog.Logger
	reg       prometheus.Registerer
	m         *metrics
	// subscribe runs the subscriber, delivering to the pipeline's methods,
	// until ctx ends (subscribeZMQ in production).
	subscribe func(ctx context.Context, p *exactPipeline) error
	// waitEngine waits until the engine's metrics page was scraped once
	// (readable or not) and returns the block size to start with: the
	// page's, else the configured one. The set is built with it, so a
	// partial block arriving first cannot set it.
	waitEngine func(context.Context) int

	// setReady is closed once Run built the set (or failed to): applying
	// waits for it.
	setReady chan struct{}

	mu      sync.Mutex // protects the fields below, and serializes the sink
	set     *blockset.Set
	scratch []blockset.Change
	// engineBlockSize and engineCapacity are what SetEngine said before the
	// set was built.
	engineBlockSize, engineCapacity int

	batches atomic.Uint64
	blocks  atomic.Int64
	gpu     atomic.Int64 // blocks held in GPU memory
	// incomplete is set after a gap that replay could not fill, cleared
	// when the set is rebuilt (the engine cleared or restarted the rank).
	incomplete atomic.Bool
	// needResync is set when the change feed overflowed: the summary must
	// be rebuilt from the whole set.
	needResync atomic.Bool
}

var _ exactSource = (*exactPipeline)(nil)

// newExactPipeline builds the KV-event pipeline (subscriber → block set →
// sink). The block set is created when the served model is known (it seeds
// the hashes), at the start of Run.
func newExactPipeline(cfg Config, waitModel func(context.Context) (string, error), sink blockSink, log *slog.Logger, reg prometheus.Registerer, m *metrics) (*exactPipeline, error) {
	return &exactPipeline{
		cfg: cfg, waitModel: waitModel, sink: sink, log: log.With("component", "events"), reg: reg, m: m,
		subscribe:  subscribeZMQ,
		waitEngine: func(context.Context) int { return cfg.BlockSize },
		setReady:   make(chan struct{}),
	}, nil
}

// Run waits for the model name, builds the block set and runs the
// subscriber until ctx ends.
func (p *exactPipeline) Run(ctx context.Context) error {
	model, err := p.waitModel(ctx)
	if err != nil {
		return nil // shutting down before the engine answered
	}
	// Subscribe at once (batches wait in the subscriber's buffer, and a
	// batch that waits too long is replayed), and build the set when the
	// engine's block size is known: applying waits for it.
	go p.buildSet(ctx, model)
	return p.subscribe(ctx, p)
}

// buildSet builds the block set once the first scrape said the engine's
// block size (or failed), then lets applying start.
func (p *exactPipeline) buildSet(ctx context.Context, model string) {
	defer close(p.setReady)
	blockSize := p.waitEngine(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.engineBlockSize > 0 {
		blockSize = p.engineBlockSize
	}
	set, err := blockset.New(blockset.Config{Model: model, BlockSize: blockSize, BlocksPerRank: p.engineCapacity}, p.log, p.reg)
	if err != nil {
		p.log.Error("block set not built: KV events are ignored", "err", err)
		return
	}
	p.set = set
}

// applyBatch applies one in-order batch (live or replayed).
func (p *exactPipeline) applyBatch(b engine.Batch) {
	<-p.setReady
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.set == nil {
		return
	}
	p.set.Apply(b)
	p.batches.Add(1)
	p.m.eventBatches.Inc()
	// AllBlocksCleared makes a rank complete again; a capacity overflow
	// makes it incomplete.
	p.incomplete.Store(p.set.Incomplete())
	p.flushLocked()
}

// clearRank drops a rank's blocks: the publisher restarted (incomplete
// false) or a gap could not be filled (incomplete true).
func (p *exactPipeline) clearRank(rank int, incomplete bool) {
	<-p.setReady
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.set == nil {
		return
	}
	p.set.ClearRank(rank, incomplete)
	p.incomplete.Store(p.set.Incomplete())
	p.flushLocked()
}

// gap counts a sequence gap; recovered reports whether replay filled it.
func (p *exactPipeline) gap(recovered bool) {
	p.m.eventGaps.Inc()
	if recovered {
		p.m.eventReplays.Inc()
	}
}

// flushLocked sends the set's pending changes to the sink, grouped in runs
// of the same medium and direction. An overflowed feed rebuilds the sink.
func (p *exactPipeline) flushLocked() {
	changes, overflow := p.set.Drain(p.scratch[:0])
	p.blocks.Store(int64(p.set.Len()))
	p.gpu.Store(int64(p.set.LenIn(MediumGPU)))
	if overflow {
		if !p.needResync.Swap(true) {
			p.log.Warn("block-set change feed overflowed: the summary will be rebuilt")
		}
		return
	}
	var run []kvblock.Hash
	for i, c := range changes {
		run = append(run, c.Hash)
		if last := i == len(changes)-1; last || changes[i+1].Medium != c.Medium || changes[i+1].Added != c.Added {
			if c.Added {
				p.sink.blocksAdded(run, c.Medium)
			} else {
				p.sink.blocksRemoved(run, c.Medium)
			}
			run = run[:0]
		}
	}
	p.scratch = changes[:0]
}

// Status implements exactSource.
func (p *exactPipeline) Status() exactStatus {
	return exactStatus{Batches: p.batches.Load(), Complete: !p.incomplete.Load(), Blocks: int(p.blocks.Load()), GPUBlocks: int(p.gpu.Load()), ResyncNeeded: p.needResync.Load()}
}

// Resync implements exactSource: fn runs under the pipeline's lock, after
// the pending changes were sent, with the whole set.
func (p *exactPipeline) Resync(fn func(map[string][]kvblock.Hash, bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sets := p.setsLocked()
	p.needResync.Store(false)
	fn(sets, !p.incomplete.Load())
}

// Sets implements exactSource.
func (p *exactPipeline) Sets() map[string][]kvblock.Hash {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.setsLocked()
}

// setsLocked sends pending changes and returns the whole set per medium.
func (p *exactPipeline) setsLocked() map[string][]kvblock.Hash {
	sets := map[string][]kvblock.Hash{}
	if p.set == nil {
		return sets
	}
	p.flushLocked()
	for _, m := range exactMedia {
		if hs := p.set.Blocks(nil, m); len(hs) > 0 {
			sets[m] = hs
		}
	}
	return sets
}

// SetEngine implements exactSource.
func (p *exactPipeline) SetEngine(blockSize, blocksPerRank int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.set == nil {
		if blockSize > 0 {
			p.engineBlockSize = blockSize
		}
		p.engineCapacity = blocksPerRank
		return
	}
	p.set.SetBlockSize(blockSize)
	p.set.SetCapacity(blocksPerRank)
	p.incomplete.Store(p.set.Incomplete())
	p.flushLocked()
}
