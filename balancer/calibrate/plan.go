package calibrate

import (
	"cmp"
	"fmt"
	"slices"
)

// probeKind is a kind of probe.
type probeKind int

const (
	// probeCold: one request with a unique prompt on an idle engine.
	probeCold probeKind = iota
	// probeWarm: a unique prefix sent once (cold), then again with new
	// suffixes, each request alone: the warm ones hit the cached prefix.
	probeWarm
	// probeDecode: concurrent streams with unique prompts and long
	// outputs; the steps where all of them decode are timed.
	probeDecode
)

// probe is one entry of the plan; every round runs each probe once.
type probe struct {
	kind probeKind
	// tokens is a cold prompt's length, a warm probe's prefix length or a
	// decode stream's prompt length.
	tokens int
	// suffixes are the new tokens of a warm probe's repeats; the first is
	// also the suffix of its cold request.
	suffixes []int
	// streams and maxTokens shape a decode probe.
	streams, maxTokens int
}

// decodeTokens is how many tokens each decode stream asks for.
const decodeTokens = 64

// planFor returns the probe plan for an engine with step budget B and room
// for prompts of maxPrompt tokens:
//
//   - cold prompts of 16 to 8192 tokens and of B, 3B/2 and 2B tokens (the
//     last two take two steps, which is what separates T0 from T_req);
//     short ones sit under the weight floor, long ones on the linear part,
//     and the spread of lengths separates the linear from the quadratic
//     attention term;
//   - warm prompts: prefixes of B/2 and B tokens re-sent with 64 and 1,024
//     new tokens (the attention of new tokens over cached ones);
//   - decodes: one stream with a short prompt, one with a long prompt, and
//     eight streams (T0 + W_floor, and A_kv from the context read per step).
func planFor(budget, maxPrompt int) []probe {
	fits := func(n int) bool { return n >= 1 && n <= maxPrompt }
	var lengths []int
	for _, n := range []int{16, 64, 256, 512, 1024, 2048, 4096, 8192, budget, budget * 3 / 2, 2 * budget} {
		if fits(n) && n <= max(2*budget, 8192) {
			lengths = append(lengths, n)
		}
	}
	slices.Sort(lengths)
	lengths = slices.Compact(lengths)
	var plan []probe
	for _, n := range lengths {
		plan = append(plan, probe{kind: probeCold, tokens: n})
	}
	for _, s := range slices.Compact([]int{budget / 2, budget}) {
		var sfx []int
		for _, n := range []int{64, 1024} {
			if fits(s+n) && n < budget {
				sfx = append(sfx, n)
			}
		}
		if s >= 64 && len(sfx) > 0 {
			plan = append(plan, probe{kind: probeWarm, tokens: s, suffixes: sfx})
		}
	}
	long := min(budget, 8192, maxPrompt-decodeTokens)
	multi := min(2048, maxPrompt-decodeTokens)
	for _, d := range []probe{
		{kind: probeDecode, tokens: 64, streams: 1, maxTokens: decodeTokens},
		{kind: probeDecode, tokens: long, streams: 1, maxTokens: decodeTokens},
		{kind: probeDecode, tokens: multi, streams: 8, maxTokens: decodeTokens},
	} {
		if d.tokens >= 16 && !slices.ContainsFunc(plan, func(p probe) bool {
			return p.kind == probeDecode && p.tokens == d.tokens && p.streams == d.streams
		}) {
			plan = append(plan, d)
		}
	}
	slices.SortStableFunc(plan, func(a, b probe) int { return cmp.Compare(a.kind, b.kind) })
	return plan
}

// name returns the probe's name, the prefix of its observations' names.
func (p probe) name() string {
	switch p.kind {
	case probeWarm:
		return fmt.Sprintf("warm-%d", p.tokens)
	case probeDecode:
		return fmt.Sprintf("decode-%dx%d", p.streams, p.tokens)
	}
	return fmt.Sprintf("cold-%d", p.tokens)
}
