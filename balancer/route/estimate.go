package route

import (
	"math"
	"time"
)

// estimator is the cost model's arithmetic: the per-step latency model of
// docs/design.md §8 (internal/enginesim LatencyModel.StepTime), applied in closed
// form to the prefill work ahead of a request and to its own prefill.
//
//	t_step = T0 + max(W_floor, T_tok/R_lin) + A_att·Σ n_i(c_i + n_i/2) + A_kv·Σ ctx_j
//
// The engine (vLLM V1) schedules the running decodes first, one token each,
// then fills the rest of the step budget with prefill chunks in arrival
// order. So with R requests decoding and Q uncached prompt tokens queued
// ahead, this request's first token comes after the Q+n prefill tokens have
// gone through steps of B-R prefill tokens each, every step also paying R
// decode tokens and their KV reads. The attention term telescopes over chunks
// (Σ over chunks of n_k(c_k + n_k/2) = n(c + n/2)), so it does not depend on
// how the prompt is cut; queued prompts are assumed to attend to about
// QueuedPromptTokens/2 keys per token.
type estimator struct {
	t0, floor, nsPerTok, att, kvRead, treq float64
	budget                                 int
	decodeCtx, queuedPrompt                float64
	missPenalty                            float64
}

func newEstimator(c CostConfig) estimator {
	return estimator{
		t0:           float64(c.StepOverhead),
		floor:        float64(c.WeightFloor),
		nsPerTok:     1e9 / c.LinearTokPerSec,
		att:          c.AttentionPerPairNS,
		kvRead:       c.KVReadPerTokenNS,
		treq:         float64(c.RequestOverhead),
		budget:       c.StepTokenBudget,
		decodeCtx:    float64(c.DecodeContextTokens),
		queuedPrompt: float64(c.QueuedPromptTokens),
		missPenalty:  c.MissPenalty,
	}
}

// step returns the time of one step with tokens tokens in total, running of
// them decodes (without the prefill attention term), in nanoseconds.
func (e *estimator) step(tokens float64, running int) float64 {
	return e.t0 + max(e.floor, tokens*e.nsPerTok) + e.kvRead*float64(running)*e.decodeCtx
}

// prefill returns the time, in ns, of the steps that push tokens prefill
// tokens through a replica with running decodes (attention excluded).
func (e *estimator) prefill(tokens float64, running int) float64 {
	if tokens <= 0 {
		return 0
	}
	r := float64(running)
	per := float64(max(e.budget-running, 1))
	full := math.Floor(tokens / per)
	rest := tokens - full*per
	t := full * e.step(per+r, running)
	if rest > 0 {
		t += e.step(rest+r, running)
	}
	return t
}

// queue is the prefill work ahead of a new request on a replica: the time
// left of the engine step under way and the uncached prompt tokens queued
// behind it.
type queue struct{ left, tokens float64 }

// queueOf splits w's pending prefill at now (Work.StepTokens): the step under
// way holds what its token budget takes of StepTokens beside the running
// decodes and has run since StepStart; the rest of StepTokens and the tokens
// sent after the step began queue behind it. A request sent now is scheduled
// at the next step start, so of the step under way it waits only for what is
// left; the queued tokens it prefills with.
func (e *estimator) queueOf(w Work, now time.Time) queue {
	q := queue{tokens: float64(max(w.PrefillTokens, 0))}
	if w.StepTokens <= 0 || w.StepStart.IsZero() {
		return q
	}
	running := w.Decodes()
	in := min(float64(w.StepTokens), float64(max(e.budget-running, 1)), q.tokens)
	q.tokens -= in
	step := e.step(in+float64(running), running) + e.att*in*e.queuedPrompt/2
	q.left = max(step-float64(now.Sub(w.StepStart)), 0)
	return q
}

// ttft returns the estimated time to first token, in ns, of a request with
// uncached new tokens and cached tokens already in KV, behind q and running
// decodes; and the part of it due to q (what an idle replica would not
// charge).
func (e *estimator) ttft(q queue, running, uncached, cached int) (total, wait float64) {
	n, c := float64(uncached), float64(cached)
	own := e.att * n * (c + n/2)
	alone := e.treq + e.prefill(n, running) + own
	if q.tokens <= 0 && q.left <= 0 {
		return alone, 0
	}
	queued := max(q.tokens, 0)
	total = e.treq + q.left + e.prefill(queued+n, running) + own + e.att*queued*e.queuedPrompt/2
	return total, total - alone
}

// penalty returns the choice's extra charge, in ns, for uncached prompt
// tokens after cached ones: MissPenalty times their prefill on an idle
// replica (CostConfig.MissPenalty).
func (e *estimator) penalty(uncached, cached int) float64 {
	if e.missPenalty == 0 || uncached <= 0 {
		return 0
	}
	n, c := float64(uncached), float64(cached)
	return e.missPenalty * (e.prefill(n, 0) + e.att*n*(c+n/2))
}

// IdleTTFT returns the cost model's time to first token for a prompt of
// promptTokens with cachedTokens already cached on an idle replica. With the
// same constants it equals internal/enginesim LatencyModel.IdleTTFT up to
// rounding (cachedTokens is clamped to [0, promptTokens-1] the same way).
func (c CostConfig) IdleTTFT(promptTokens, cachedTokens int) time.Duration {
	if promptTokens <= 0 {
		return c.RequestOverhead
	}
	cachedTokens = max(0, min(cachedTokens, promptTokens-1))
	e := newEstimator(c)
	t, _ := e.ttft(queue{}, 0, promptTokens-cachedTokens, cachedTokens)
	return time.Duration(math.Round(t))
}
