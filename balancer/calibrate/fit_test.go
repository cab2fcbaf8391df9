package calibrate

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/enginesim"
)

// slowModel is a latency model far from the defaults (the prior).
func slowModel() enginesim.LatencyModel {
	return enginesim.LatencyModel{
		StepOverhead: 2 * time.Millisecond, WeightFloor: 9 * time.Millisecond, LinearTokPerSec: 15000,
		AttentionPerPairNS: 2.9, KVReadPerTokenNS: 140, RequestOverhead: 22 * time.Millisecond,
	}
}

// syntheticObs returns, for the simulator's model m, what a probe plan
// would measure with no noise.
func syntheticObs(m enginesim.LatencyModel, budget int) []Observation {
	var obs []Observation
	for _, p := range planFor(budget, 4*budget) {
		switch p.kind {
		case probeCold:
			obs = append(obs, Observation{Probe: p.name(), Kind: KindTTFT, PromptTokens: p.tokens, Measured: m.IdleTTFT(p.tokens, 0, budget)})
		case probeWarm:
			for _, n := range p.suffixes {
				obs = append(obs, Observation{Probe: p.name(), Kind: KindTTFT, PromptTokens: p.tokens + n, CachedTokens: p.tokens,
					Measured: m.IdleTTFT(p.tokens+n, p.tokens, budget)})
			}
		case probeDecode:
			ctx := make([]int, p.streams)
			for i := range ctx {
				ctx[i] = p.tokens + p.maxTokens/2
			}
			obs = append(obs, Observation{Probe: p.name(), Kind: KindStep, Decodes: p.streams, DecodeContext: p.streams * (p.tokens + p.maxTokens/2),
				Measured: m.StepTime(nil, ctx)})
		}
	}
	return obs
}

func TestFitRecoversTheConstantsExactly(t *testing.T) {
	for _, tc := range []struct {
		budget int
		host   float64 // ns per prompt token added to every TTFT
	}{{8192, 0}, {2048, 0}, {8192, 3000}, {2048, 1500}} {
		budget := tc.budget
		m := slowModel()
		obs := syntheticObs(m, budget)
		for i := range obs {
			if obs[i].Kind == KindTTFT {
				obs[i].Measured += time.Duration(tc.host * float64(obs[i].PromptTokens))
			}
		}
		p, rms, err := fitParams(obs, fitOptions{budget: budget, prior: paramsOf(route.DefaultCostConfig())})
		if err != nil {
			t.Fatal(err)
		}
		want := params{pTreq: float64(m.RequestOverhead), pT0: float64(m.StepOverhead), pFloor: float64(m.WeightFloor),
			pInvR: 1e9 / m.LinearTokPerSec, pAtt: m.AttentionPerPairNS, pKV: m.KVReadPerTokenNS, pHost: tc.host}
		for j := range numParams {
			if math.Abs(p[j]-want[j]) > 1e-3*want[j]+1 {
				t.Errorf("budget %d, host %g: %s = %g, want %g", budget, tc.host, paramNames[j], p[j], want[j])
			}
		}
		if rms > 1e-6 {
			t.Errorf("budget %d, host %g: rms relative residual %g on noise-free data", budget, tc.host, rms)
		}
	}
}

// Positive noise (what a loaded host adds) of up to 2 ms on every probe
// moves the predictions by about that much, not more.
func TestFitUnderBoundedNoise(t *testing.T) {
	m := slowModel()
	obs := syntheticObs(m, 8192)
	for i := range obs {
		obs[i].Measured += time.Duration(i%5) * 500 * time.Microsecond
	}
	p, _, err := fitParams(obs, fitOptions{budget: 8192, prior: paramsOf(route.DefaultCostConfig())})
	if err != nil {
		t.Fatal(err)
	}
	c := costConfig(route.DefaultCostConfig(), p, 8192)
	for _, n := range []int{100, 1000, 5000, 12000, 16384} {
		want := m.IdleTTFT(n, 0, 8192)
		got := c.IdleTTFT(n, 0)
		if d := got - want; d.Abs() > 3*time.Millisecond+want/50 {
			t.Errorf("IdleTTFT(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestFitKeepsFixedConstants(t *testing.T) {
	m := slowModel()
	obs := syntheticObs(m, 8192)
	prior := paramsOf(route.DefaultCostConfig())
	var fixed [numParams]bool
	fixed[pT0] = true
	p, _, err := fitParams(obs, fitOptions{budget: 8192, prior: prior, fixed: fixed})
	if err != nil {
		t.Fatal(err)
	}
	if p[pT0] != prior[pT0] {
		t.Errorf("fixed step_overhead moved: %g, want %g", p[pT0], prior[pT0])
	}
}

func TestNNLS(t *testing.T) {
	tests := []struct {
		name string
		a    [][]float64
		b    []float64
		want []float64
	}{
		{"exact", [][]float64{{1, 0}, {0, 1}, {1, 1}}, []float64{1, 2, 3}, []float64{1, 2}},
		{"clamped at zero", [][]float64{{1, 0}, {0, 1}}, []float64{1, -2}, []float64{1, 0}},
		{"zero column", [][]float64{{1, 0}, {2, 0}}, []float64{2, 4}, []float64{2, 0}},
		{"scaled columns", [][]float64{{1, 1e8}, {1, 2e8}, {1, 4e8}}, []float64{10 + 1.5e8, 10 + 3e8, 10 + 6e8}, []float64{10, 1.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := nnls(tt.a, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			for j := range tt.want {
				if math.Abs(x[j]-tt.want[j]) > 1e-6*(1+math.Abs(tt.want[j])) {
					t.Errorf("x = %v, want %v", x, tt.want)
				}
			}
		})
	}
	if _, err := nnls([][]float64{{math.NaN()}}, []float64{1}); err == nil {
		t.Error("nnls accepted a NaN")
	}
}

func TestPlausibility(t *testing.T) {
	prior := paramsOf(route.DefaultCostConfig())
	fitted := prior
	fitted[pAtt] *= 30
	fitted[pKV] = 0
	var fixed [numParams]bool
	fixed[pKV] = true
	notes := plausibility(prior, fitted, fixed, 0.2)
	if len(notes) != 2 || !strings.Contains(notes[0], "attention_per_pair_ns came out 30×") || !strings.Contains(notes[1], "RMS error 20%") {
		t.Errorf("notes %q", notes)
	}
	if notes := plausibility(prior, prior, [numParams]bool{}, 0.01); len(notes) != 0 {
		t.Errorf("a fit equal to the prior got notes %q", notes)
	}
}
