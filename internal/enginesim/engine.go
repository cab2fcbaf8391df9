package enginesim

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// maxCatchUp is how far the virtual timeline may fall behind the wall clock
// before the engine re-anchors it to now. Within it, a step loop the
// machine woke late (a busy CPU, a long GC) runs the steps it owes back to
// back until its timeline is at the wall clock again, so the simulated GPU
// computes as much per second as its latency model says whatever CPU the
// machine gives the simulator. Beyond it (a process stopped for a second)
// the lost time is not made up. Re-anchoring at 20 ms, as before 2026-12-06,
// cost four simulators beside four balancers on a 2-core machine 1.7 s of
// engine time in a W6 run and doubled their preemptions (docs/sim.md).
const maxCatchUp = time.Second

// Engine is one simulated vLLM engine core: a step loop with continuous
// batching and chunked prefill, a vLLM-style block pool with prefix caching,
// a per-step latency model and vLLM's (or SGLang's) metrics.
//
// Submit, Abort (through Stream), ResetPrefixCache, CachedBlocks, Restart
// and Load are safe to call from any goroutine while Run is running. Events
// reach the KVEventSink from the step loop (and from ResetPrefixCache while
// the engine is idle), always under the engine's lock, one call at a time.
type Engine struct {
	cfg  EngineConfig
	log  *slog.Logger
	m    rankMetrics
	sink KVEventSink

	wake chan struct{} // a submission or reset arrived (buffered, 1)

	mu       sync.Mutex // protects the fields below
	pool     *blockPool
	events   []kvEvent // prefix-cache events of the step in flight
	epoch    uint64    // bumped by Restart; in-flight steps of an old epoch are dropped
	pending  []*seq    // inside RequestOverhead, by readyAt
	waiting  []*seq
	running  []*seq
	inflight bool // a step is between schedule and apply
	started  bool
	stopped  bool
	stepHook func(*stepPlan) // tests: called with every scheduled step
	// finishedLog holds the last finished requests (FinishedRequests).
	finishedLog requestLog
}

// NewEngine returns an engine for cfg. m may be nil (no metrics) and events
// may be nil (no KV events).
func NewEngine(cfg EngineConfig, log *slog.Logger, m *Metrics, events KVEventSink) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{
		cfg:  cfg,
		log:  log.With("engine", cfg.Rank),
		sink: events,
		wake: make(chan struct{}, 1),
		m:    noopMetrics{},
	}
	if m != nil {
		rm, err := m.bind(cfg)
		if err != nil {
			return nil, fmt.Errorf("engine metrics: %w", err)
		}
		e.m = rm
	}
	e.pool = newBlockPool(cfg.NumGPUBlocks, randomKey(), e.recordEvent)
	e.m.state(0, 0, 0)
	return e, nil
}

func randomKey() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// recordEvent queues a prefix-cache event for the end of the step.
func (e *Engine) recordEvent(ev kvEvent) {
	if e.sink != nil {
		e.events = append(e.events, ev)
	}
}

// flushEvents hands the queued events to the sink as one batch at ts.
func (e *Engine) flushEvents(ts time.Time) {
	if e.sink == nil || len(e.events) == 0 {
		return
	}
	for _, ev := range e.events {
		switch ev.kind {
		case evStored:
			var parent *uint64
			if ev.hasParent {
				p := ev.parent
				parent = &p
			}
			e.sink.BlockStored(ev.hashes, parent, ev.tokens, e.cfg.BlockSize, ev.lora)
		case evRemoved:
			e.sink.BlockRemoved(ev.hashes[0])
		case evCleared:
			e.sink.AllBlocksCleared()
		}
	}
	clear(e.events)
	e.events = e.events[:0]
	e.sink.EndStep(ts)
}

// Submit queues r and returns its output stream. It fails with a
// *PromptTooLongError when r can never be served (prompt plus MaxTokens over
// MaxModelLen, or more KV than the engine has), with ErrInvalidRequest for a
// malformed request and with ErrEngineStopped after Run returned.
func (e *Engine) Submit(r *Request) (*Stream, error) {
	switch {
	case r == nil:
		return nil, fmt.Errorf("submit: %w: nil request", ErrInvalidRequest)
	case len(r.Prompt) == 0:
		return nil, fmt.Errorf("submit %q: %w: empty prompt", r.ID, ErrInvalidRequest)
	case r.Generate == nil:
		return nil, fmt.Errorf("submit %q: %w: no generator", r.ID, ErrInvalidRequest)
	case r.MaxTokens < 1:
		return nil, fmt.Errorf("submit %q: %w: max_tokens must be >= 1, got %d", r.ID, ErrInvalidRequest, r.MaxTokens)
	case r.MinTokens < 0:
		return nil, fmt.Errorf("submit %q: %w: min_tokens must be >= 0, got %d", r.ID, ErrInvalidRequest, r.MinTokens)
	}
	if len(r.Prompt)+r.MaxTokens > e.cfg.MaxModelLen {
		return nil, &PromptTooLongError{PromptTokens: len(r.Prompt), MaxTokens: r.MaxTokens, MaxModelLen: e.cfg.MaxModelLen}
	}
	// The KV of the last generated token is never computed.
	if need := len(r.Prompt) + r.MaxTokens - 1; need > e.cfg.kvTokens() {
		return nil, &PromptTooLongError{PromptTokens: len(r.Prompt), MaxTokens: r.MaxTokens, MaxModelLen: e.cfg.MaxModelLen, KVCapacity: e.cfg.kvTokens()}
	}

	arrival := r.Arrival
	if arrival.IsZero() {
		arrival = time.Now()
	}
	s := &seq{
		req:          r,
		promptLen:    len(r.Prompt),
		cachedTokens: -1,
		out:          make(chan Output, outCap(r.MaxTokens)),
	}
	s.tokens = make([]uint32, len(r.Prompt), len(r.Prompt)+min(r.MaxTokens, 256))
	copy(s.tokens, r.Prompt)
	s.hashes = kvblock.Hashes(nil, r.Seed, s.tokens, e.cfg.BlockSize)
	s.arrival = arrival
	if !e.cfg.ZeroLatency {
		s.readyAt = arrival.Add(e.cfg.Latency.RequestOverhead)
	}

	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, ErrEngineStopped
	}
	s.epoch = e.epoch
	i := len(e.pending)
	for i > 0 && e.pending[i-1].readyAt.After(s.readyAt) {
		i--
	}
	e.pending = slices.Insert(e.pending, i, s)
	e.mu.Unlock()
	e.signal()

	var once sync.Once
	abort := func(reason string) {
		once.Do(func() { e.abort(s, reason) })
	}
	return &Stream{Out: s.out, Abort: abort}, nil
}

func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// abort ends s at once: its slot and blocks are freed now, even while a step
// is in flight (that step's result for s is dropped).
func (e *Engine) abort(s *seq, reason string) {
	if reason != "stop" {
		reason = "abort"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.state == seqFinished || s.epoch != e.epoch {
		return
	}
	switch s.state {
	case seqPending:
		e.pending = slices.DeleteFunc(e.pending, func(x *seq) bool { return x == s })
	case seqWaiting:
		e.waiting = slices.DeleteFunc(e.waiting, func(x *seq) bool { return x == s })
	case seqRunning:
		e.running = slices.DeleteFunc(e.running, func(x *seq) bool { return x == s })
	}
	e.finish(s, reason, nil, time.Now())
	e.m.state(len(e.running), len(e.waiting), e.pool.usage())
}

// finish ends s with reason, delivering toks (may be nil) in the final
// Output. The caller has removed s from the engine's queues.
func (e *Engine) finish(s *seq, reason string, toks []uint32, t time.Time) {
	e.releaseBlocks(s)
	s.state = seqFinished
	s.push(Output{Tokens: toks, Finished: true, FinishReason: reason, Time: t})
	f := finishStats{
		reason:     reason,
		prompt:     s.promptLen,
		generation: s.numOutput,
		cached:     max(s.cachedTokens, 0),
		e2e:        t.Sub(s.arrival),
	}
	e.record(s, reason, t)
	if !s.firstToken.IsZero() {
		f.hasTimes = true
		f.queue = s.queueTime()
		f.prefill = s.firstToken.Sub(s.firstSched)
		f.decode = s.lastToken.Sub(s.firstToken)
		f.inference = s.lastToken.Sub(s.firstSched)
	}
	e.m.finished(f)
}
