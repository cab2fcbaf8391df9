package route

import (
	"math"
	"math/rand/v2"
	"testing"
)

// stepSim runs the vLLM V1 schedule of docs/perf-model.md#how-the-engines-schedule step by step with
// the docs/design.md §8 step formula: every step carries the running decodes
// first (one token each, context ctx), then prefill chunks in arrival order
// up to the token budget. The queue is one request of queued uncached
// tokens, then ours: uncached tokens after cached ones. It returns the time,
// in ns, at which our prefill completes, plus T_req.
func stepSim(c CostConfig, queued, running, ctx, uncached, cached int) float64 {
	type pre struct{ left, done int }
	reqs := []pre{{queued, 0}, {uncached, cached}}
	t := float64(c.RequestOverhead)
	for reqs[1].left > 0 {
		budget := max(c.StepTokenBudget-running, 1)
		tokens := running
		pairs := 0.0
		for i := range reqs {
			if budget == 0 {
				break
			}
			n := min(budget, reqs[i].left)
			if n == 0 {
				continue
			}
			pairs += float64(n) * (float64(reqs[i].done) + float64(n)/2)
			reqs[i].left -= n
			reqs[i].done += n
			budget -= n
			tokens += n
		}
		lin := max(float64(c.WeightFloor), float64(tokens)/c.LinearTokPerSec*1e9)
		t += float64(c.StepOverhead) + lin + c.AttentionPerPairNS*pairs + c.KVReadPerTokenNS*float64(running*ctx)
	}
	return t
}

// The closed-form estimate equals a step-by-step simulation of the engine's
// schedule, queue and decode interference included, when the queued
// request's attention is what the model assumes (QueuedPromptTokens = its
// length).
func TestEstimatorMatchesStepSimulation(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		c := DefaultCostConfig()
		c.StepTokenBudget = []int{512, 2048, 8192}[r.IntN(3)]
		queued := r.IntN(3) * r.IntN(40000)
		running := r.IntN(3) * r.IntN(300)
		c.DecodeContextTokens = 1 + r.IntN(8000)
		c.QueuedPromptTokens = queued
		uncached := 1 + r.IntN(20000)
		cached := r.IntN(2) * r.IntN(30000)
		e := newEstimator(c)
		got, wait := e.ttft(queue{tokens: float64(queued)}, running, uncached, cached)
		want := stepSim(c, queued, running, c.DecodeContextTokens, uncached, cached)
		if math.Abs(got-want) > 1e-6*want {
			t.Fatalf("q=%d r=%d n=%d c=%d B=%d: estimate %.0f ns, simulation %.0f ns",
				queued, running, uncached, cached, c.StepTokenBudget, got, want)
		}
		alone := stepSim(c, 0, running, c.DecodeContextTokens, uncached, cached)
		if math.Abs(wait-(want-alone)) > 1e-6*want {
			t.Fatalf("q=%d r=%d: queue wait %.0f ns, simulation %.0f ns", queued, running, wait, want-alone)
		}
	}
}
