package enginesim

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Run runs the step loop until ctx is done, then ends every remaining
// sequence with "abort" and returns nil. Run may be called once.
//
// Step k ends at t_k = t_(k-1) + StepTime on a virtual timeline and the loop
// sleeps until t_k, so timer overshoot never accumulates; outputs carry t_k.
// A loop woken late catches up: its next steps start at the previous ones'
// ends, back to back, until the timeline reaches the wall clock (requests
// join a step only once ready by its start). When the engine goes idle, or
// falls more than maxCatchUp behind, the timeline re-anchors to time.Now(). With ZeroLatency steps run back to
// back without sleeping, and an idle engine blocks until a submission.
func (e *Engine) Run(ctx context.Context) error {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errors.New("engine: run called twice")
	}
	e.started = true
	e.mu.Unlock()
	e.log.Debug("engine loop started", "block_size", e.cfg.BlockSize, "num_gpu_blocks", e.cfg.NumGPUBlocks,
		"zero_latency", e.cfg.ZeroLatency)
	defer e.shutdown()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var last time.Time // end of the previous step; zero while idle
	for {
		e.mu.Lock()
		now := time.Now()
		start := now
		if !last.IsZero() && !e.cfg.ZeroLatency && now.Sub(last) <= maxCatchUp {
			start = last
		}
		p := e.schedule(start)
		if len(p.items) == 0 {
			busy := len(e.running) > 0 || len(e.waiting) > 0
			var next time.Time
			if len(e.pending) > 0 {
				next = e.pending[0].readyAt
			}
			e.mu.Unlock()
			last = time.Time{}
			if busy && p.preempted > 0 {
				continue // preemption freed blocks; schedule again
			}
			if !e.idle(ctx, timer, next) {
				return nil
			}
			continue
		}
		var d time.Duration
		if !e.cfg.ZeroLatency {
			d = e.cfg.Latency.StepTime(p.prefills, p.decodes)
		}
		p.end = start.Add(d)
		if e.stepHook != nil {
			e.stepHook(p)
		}
		e.inflight = true
		e.mu.Unlock()

		if d > 0 && !sleepUntil(ctx, timer, p.end) {
			return nil
		}

		e.mu.Lock()
		e.inflight = false
		e.apply(p)
		e.mu.Unlock()
		last = p.end
		if ctx.Err() != nil {
			return nil
		}
	}
}

// idle blocks until a submission, the next pending request's readiness
// (next, if not zero) or the end of ctx; it reports false when ctx ended.
func (e *Engine) idle(ctx context.Context, timer *time.Timer, next time.Time) bool {
	if !next.IsZero() {
		timer.Reset(time.Until(next))
		defer timer.Stop()
	}
	select {
	case <-ctx.Done():
		return false
	case <-e.wake:
	case <-timer.C:
	}
	return true
}

// sleepUntil sleeps until t on timer; it reports false when ctx ended first.
func sleepUntil(ctx context.Context, timer *time.Timer, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer.Reset(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// shutdown ends every sequence after Run returns.
func (e *Engine) shutdown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopped = true
	e.inflight = false
	e.dropAll()
	e.log.Debug("engine loop stopped")
}

// dropAll ends every sequence with "abort".
func (e *Engine) dropAll() {
	now := time.Now()
	for _, q := range [][]*seq{e.running, e.waiting, e.pending} {
		for _, s := range q {
			e.finish(s, "abort", nil, now)
		}
	}
	clear(e.running)
	clear(e.waiting)
	clear(e.pending)
	e.running, e.waiting, e.pending = e.running[:0], e.waiting[:0], e.pending[:0]
	e.m.state(0, 0, e.pool.usage())
}

// apply ends step p: it samples a token for every sequence whose prompt is
// now computed, finishes sequences that stop, delivers outputs and events,
// and records metrics.
func (e *Engine) apply(p *stepPlan) {
	if p.epoch != e.epoch {
		return // Restart dropped everything this step computed
	}
	bs := e.cfg.BlockSize
	generated := 0
	finished := false
	for _, it := range p.items {
		s := it.s
		if s.state != seqRunning {
			continue // aborted while the step was in flight
		}
		if s.computed < s.numTokens() {
			continue // a prefill chunk that did not reach the end
		}
		tok := s.req.Generate(s.numOutput)
		s.appendToken(tok, bs)
		s.decoding = true
		generated++
		if s.firstToken.IsZero() {
			s.firstToken = p.end
			e.m.firstToken(s.promptLen, max(s.cachedTokens, 0), p.end.Sub(s.arrival))
		} else {
			e.m.interToken(p.end.Sub(s.lastToken))
		}
		s.lastToken = p.end
		if reason := s.stopReason(); reason != "" {
			finished = true // removed from running below
			e.finish(s, reason, []uint32{tok}, p.end)
			continue
		}
		s.push(Output{Tokens: []uint32{tok}, Time: p.end})
	}
	if finished {
		e.running = slices.DeleteFunc(e.running, func(s *seq) bool { return s.state == seqFinished })
	}
	for _, s := range e.running {
		s.flush()
	}
	e.flushEvents(p.end)
	e.m.step(p.tokens, generated)
	e.m.state(len(e.running), len(e.waiting), e.pool.usage())
}
