package calibrate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// runner runs probes against one engine.
type runner struct {
	c       *engineClient
	model   string
	gen     *promptGen
	timeout time.Duration
	// cachedUnreported is set when a warm request's usage had no
	// cached_tokens.
	cachedUnreported bool
}

// request sends one probe request, bounded by the request timeout.
func (r *runner) request(ctx context.Context, prompt string, maxTokens int) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.c.complete(ctx, r.model, prompt, maxTokens)
}

// ttftObs turns a sample into a KindTTFT observation.
func ttftObs(name string, s sample) Observation {
	return Observation{Probe: name, Kind: KindTTFT, PromptTokens: s.PromptTokens, CachedTokens: s.CachedTokens, Measured: s.TTFT()}
}

// run runs the probe once and returns its observations.
func (r *runner) run(ctx context.Context, p probe) ([]Observation, error) {
	switch p.kind {
	case probeCold:
		s, err := r.request(ctx, r.gen.text(p.tokens), 1)
		if err != nil {
			return nil, err
		}
		return []Observation{ttftObs(p.name(), s)}, nil
	case probeWarm:
		return r.runWarm(ctx, p)
	case probeDecode:
		o, err := r.runDecode(ctx, p)
		if err != nil {
			return nil, err
		}
		return []Observation{o}, nil
	}
	return nil, fmt.Errorf("unknown probe kind %d", p.kind)
}

// runWarm sends a new prefix with the first suffix (a cold request), then
// the prefix with each suffix again, with new words: those hit the prefix.
func (r *runner) runWarm(ctx context.Context, p probe) ([]Observation, error) {
	prefix := r.gen.text(p.tokens)
	s, err := r.request(ctx, prefix+r.gen.suffix(p.suffixes[0]), 1)
	if err != nil {
		return nil, err
	}
	out := []Observation{ttftObs(p.name()+"-cold", s)}
	for _, n := range p.suffixes {
		sfx := r.gen.suffix(n)
		s, err := r.request(ctx, prefix+sfx, 1)
		if err != nil {
			return nil, err
		}
		if !s.CachedReported {
			r.cachedUnreported = true
			// Without usage.prompt_tokens_details the engine is assumed to
			// hold the prefix in whole 16-token blocks (vLLM's default).
			s.CachedTokens = max(0, s.PromptTokens-n) / 16 * 16
		}
		out = append(out, ttftObs(fmt.Sprintf("%s+%d", p.name(), n), s))
	}
	return out, nil
}

// minWindowGaps is the fewest all-decoding steps a decode probe needs.
const minWindowGaps = 8

// runDecode starts the probe's streams together and returns the duration
// of the steps in which all of them were decoding: from the last stream's
// first token to the first stream's last token.
func (r *runner) runDecode(ctx context.Context, p probe) (Observation, error) {
	prompts := make([]string, p.streams)
	for i := range prompts {
		prompts[i] = r.gen.text(p.tokens)
	}
	samples := make([]sample, p.streams)
	errs := make([]error, p.streams)
	var wg sync.WaitGroup
	for i := range prompts {
		wg.Go(func() { samples[i], errs[i] = r.request(ctx, prompts[i], p.maxTokens) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Observation{}, err
		}
	}
	return decodeObservation(p.name(), samples)
}

// decodeObservation computes a decode probe's observation from its streams.
// Within the window where every stream decodes, each step gives each stream
// one token, so a stream's step time is the slope of its events' arrival
// times against its token count: the median of the slopes between pairs of
// events 4 to 8 tokens apart (Theil–Sen restricted to short spans). Events
// merged by the engine or the reader, delivery jitter, and a stall of the
// host that shifts every later event (only the few pairs spanning it see
// it) do not move it. The observation is the median over streams; its context is each
// stream's prompt plus the tokens it had in the middle of the window,
// summed.
func decodeObservation(name string, samples []sample) (Observation, error) {
	var start, end time.Time
	for i, s := range samples {
		first, last := s.Events[0].At, s.Events[len(s.Events)-1].At
		if i == 0 || first.After(start) {
			start = first
		}
		if i == 0 || last.Before(end) {
			end = last
		}
	}
	var steps []float64
	ctxSum, total := 0, 0
	for _, s := range samples {
		var xs, ys []float64
		done := 0
		for _, ev := range s.Events {
			done += ev.Tokens
			if !ev.At.Before(start) && !ev.At.After(end) {
				xs = append(xs, float64(done))
				ys = append(ys, float64(ev.At.Sub(start)))
			}
		}
		if len(xs) < 3 || xs[len(xs)-1]-xs[0] < 2 {
			return Observation{}, fmt.Errorf("%s: a stream has fewer than 3 events in which all %d streams decode", name, len(samples))
		}
		st, ok := shortSlope(xs, ys, 4, 8)
		if !ok {
			return Observation{}, fmt.Errorf("%s: a stream has no two events 4 to 8 tokens apart in which all %d streams decode", name, len(samples))
		}
		steps = append(steps, st)
		ctxSum += s.PromptTokens + int(xs[0]+xs[len(xs)-1])/2
		total += int(xs[len(xs)-1] - xs[0])
	}
	if total < minWindowGaps {
		return Observation{}, fmt.Errorf("%s: %d all-decoding steps, want >= %d", name, total, minWindowGaps)
	}
	step := median(steps)
	if !(step > 0) {
		return Observation{}, fmt.Errorf("%s: decode steps took no time", name)
	}
	return Observation{Probe: name, Kind: KindStep, Decodes: len(samples), DecodeContext: ctxSum, Measured: time.Duration(step)}, nil
}

// shortSlope returns the median of the slopes (ys[j]-ys[i])/(xs[j]-xs[i])
// over the pairs with xs[j]-xs[i] in [lo, hi] (xs ascending), and whether
// there was one.
func shortSlope(xs, ys []float64, lo, hi float64) (float64, bool) {
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs) && xs[j]-xs[i] <= hi; j++ {
			if dx := xs[j] - xs[i]; dx >= lo {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return 0, false
	}
	return median(slopes), true
}

// median returns the median of v (the mean of the middle two for an even
// count); v is sorted in place.
func median[T ~int64 | ~float64](v []T) T {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
