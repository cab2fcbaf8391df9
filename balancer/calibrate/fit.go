package calibrate

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
)

// Kind says what an Observation measured.
type Kind int

// Observation kinds.
const (
	// KindTTFT is the time to first token of one request alone on an idle
	// engine: T_req plus the steps of its uncached prefill.
	KindTTFT Kind = iota
	// KindStep is the duration of one engine step that only decodes:
	// Decodes requests with DecodeContext context tokens in total.
	KindStep
)

// String returns "ttft" or "step".
func (k Kind) String() string {
	if k == KindStep {
		return "step"
	}
	return "ttft"
}

// Observation is one measured quantity the fit explains, the fastest of a
// probe's repetitions (see docs/calibrate.md).
type Observation struct {
	// Probe names the probe ("cold-4096", "warm-8192+64", "decode-8x2048").
	Probe string
	Kind  Kind
	// PromptTokens and CachedTokens describe a KindTTFT request (from its
	// usage).
	PromptTokens, CachedTokens int
	// Decodes and DecodeContext describe a KindStep step.
	Decodes, DecodeContext int
	// Measured is the time measured.
	Measured time.Duration
	// Samples is how many repetitions Measured was chosen from.
	Samples int
	// Spread is the median minus the fastest repetition: how noisy the
	// probe was.
	Spread time.Duration
}

// The fitted constants, in ns (invR in ns per token). pHost is the host's
// time per prompt token before the engine schedules a request (the API
// server parsing and tokenizing the prompt): it is in every measured TTFT,
// cached prompt or not, so left out it would be read as prefill work.
// The cost model has no key for it, and needs none: every replica
// tokenizes the whole prompt, so it never changes which one is fastest.
const (
	pTreq = iota
	pT0
	pFloor
	pInvR
	pAtt
	pKV
	pHost
	numParams
)

var paramNames = [numParams]string{"request_overhead", "step_overhead", "weight_floor", "linear_tok_per_sec", "attention_per_pair_ns", "kv_read_per_token_ns", "host_ns_per_prompt_token"}

type params [numParams]float64

func paramsOf(c route.CostConfig) params {
	return params{
		pTreq: float64(c.RequestOverhead), pT0: float64(c.StepOverhead), pFloor: float64(c.WeightFloor),
		pInvR: 1e9 / c.LinearTokPerSec, pAtt: c.AttentionPerPairNS, pKV: c.KVReadPerTokenNS,
	}
}

// row returns the observation's coefficients of the constants when each
// step's regime (weight floor or linear) is decided by p, so that the
// model's prediction is row·p.
func row(o Observation, budget int, p params) params {
	var r params
	floorStep := func(tokens int) {
		r[pT0]++
		if p[pFloor] >= float64(tokens)*p[pInvR] {
			r[pFloor]++
		} else {
			r[pInvR] += float64(tokens)
		}
	}
	switch o.Kind {
	case KindTTFT:
		cached := max(0, min(o.CachedTokens, o.PromptTokens-1))
		n := o.PromptTokens - cached
		r[pTreq] = 1
		r[pHost] = float64(o.PromptTokens)
		for left := n; left > 0; left -= budget {
			floorStep(min(budget, left))
		}
		r[pAtt] = float64(n) * (float64(cached) + float64(n)/2)
	case KindStep:
		floorStep(o.Decodes)
		r[pKV] = float64(o.DecodeContext)
	}
	return r
}

func dot(r, p params) float64 {
	s := 0.0
	for j := range numParams {
		s += r[j] * p[j]
	}
	return s
}

// predict returns the model's prediction of o under p, in ns.
func predict(o Observation, budget int, p params) float64 { return dot(row(o, budget, p), p) }

// fitOptions says which constants the observations cannot identify; those
// keep the prior's value.
type fitOptions struct {
	budget int
	prior  params
	fixed  [numParams]bool
}

// fitParams fits the constants to obs by relative least squares with every
// constant ≥ 0. The max() of the step model is handled by fixing each
// step's regime from the current estimate, solving the then linear problem
// (nnls), and repeating until the regimes no longer change; this starts from
// the prior, from "every step linear" and from "every step at the floor",
// and keeps the best of the three.
func fitParams(obs []Observation, o fitOptions) (params, float64, error) {
	if len(obs) == 0 {
		return params{}, 0, errors.New("no observations")
	}
	starts := []params{o.prior, o.prior, o.prior}
	starts[1][pFloor] = 0
	starts[2][pFloor] = math.Inf(1)
	var (
		best    params
		bestObj = math.Inf(1)
		lastErr error
	)
	for _, start := range starts {
		p, err := iterateRegimes(obs, o, start)
		if err != nil {
			lastErr = err
			continue
		}
		if obj := objective(obs, o.budget, p); obj < bestObj {
			best, bestObj = p, obj
		}
	}
	if math.IsInf(bestObj, 1) {
		return params{}, 0, fmt.Errorf("fit: %w", lastErr)
	}
	return best, math.Sqrt(bestObj / float64(len(obs))), nil
}

func iterateRegimes(obs []Observation, o fitOptions, start params) (params, error) {
	p := start
	var prevKey string
	for range 50 {
		a := make([][]float64, 0, len(obs))
		b := make([]float64, 0, len(obs))
		var key []byte
		for _, ob := range obs {
			r := row(ob, o.budget, p)
			key = fmt.Appendf(key, "%v;", r[pFloor])
			y := float64(ob.Measured)
			if y <= 0 {
				continue
			}
			rhs := 1.0
			var free []float64
			for j := range numParams {
				if o.fixed[j] {
					rhs -= r[j] * o.prior[j] / y
				} else {
					free = append(free, r[j]/y)
				}
			}
			a = append(a, free)
			b = append(b, rhs)
		}
		if len(a) == 0 {
			return p, errors.New("no positive measurement")
		}
		x, err := nnls(a, b)
		if err != nil {
			return p, err
		}
		next := o.prior
		k := 0
		for j := range numParams {
			if !o.fixed[j] {
				next[j] = x[k]
				k++
			}
		}
		p = next
		if string(key) == prevKey {
			break
		}
		prevKey = string(key)
	}
	return p, nil
}

// objective is Σ ((prediction − measured) / measured)².
func objective(obs []Observation, budget int, p params) float64 {
	s := 0.0
	for _, o := range obs {
		y := float64(o.Measured)
		if y <= 0 {
			continue
		}
		d := (predict(o, budget, p) - y) / y
		s += d * d
	}
	return s
}

// costConfig returns prior with the fitted constants, rounded to four
// significant digits (durations to the microsecond).
func costConfig(prior route.CostConfig, p params, budget int) route.CostConfig {
	c := prior
	dur := func(ns float64) time.Duration { return time.Duration(math.Round(ns/1e3)) * time.Microsecond }
	c.RequestOverhead = dur(p[pTreq])
	c.StepOverhead = dur(p[pT0])
	c.WeightFloor = dur(p[pFloor])
	c.LinearTokPerSec = round4(1e9 / p[pInvR])
	c.AttentionPerPairNS = round4(p[pAtt])
	c.KVReadPerTokenNS = round4(p[pKV])
	c.StepTokenBudget = budget
	return c
}

// round4 rounds v to four significant digits.
func round4(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	e := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*e) / e
}
