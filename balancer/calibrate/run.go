package calibrate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
)

// discoveryTimeout bounds the discovery requests (models, tokenize, the
// first completions), or the request timeout when that is shorter.
const discoveryTimeout = 10 * time.Second

// Run probes the engine, fits the cost model and returns the result. It
// never runs longer than cfg.MaxDuration (plus the fit): a round of probes
// that would not finish in time is not started, and a request still running
// at the deadline is cancelled.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.MaxDuration)
	defer cancel()
	c, err := newEngineClient(cfg.Engine, cfg.APIKey)
	if err != nil {
		return nil, err
	}
	defer c.close()
	r := &runner{c: c, timeout: cfg.RequestTimeout}
	res := &Result{Engine: cfg.Engine}
	maxPrompt, err := r.discover(ctx, cfg, res, log)
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", cfg.Engine, err)
	}
	plan := planFor(cfg.StepTokenBudget, maxPrompt)
	log.Info("calibrating", "engine", cfg.Engine, "model", r.model, "probes", len(plan), "step_token_budget", cfg.StepTokenBudget,
		"max_prompt_tokens", maxPrompt, "tokens_per_word", r.gen.tokensPerWord)

	samples := map[string][]Observation{}
	var order []string
	var lastRound time.Duration
	for round := range cfg.Repetitions {
		if dl, ok := ctx.Deadline(); ok && round > 0 && time.Until(dl) < lastRound*11/10 {
			res.Notes = append(res.Notes, fmt.Sprintf("stopped after %d of %d rounds to stay within --max-duration %v", round, cfg.Repetitions, cfg.MaxDuration))
			break
		}
		t0 := time.Now()
		for _, p := range plan {
			obs, err := r.run(ctx, p)
			if ctx.Err() != nil {
				break
			}
			if err != nil {
				log.Warn("probe failed", "probe", p.name(), "round", round, "err", err)
				res.Notes = appendOnce(res.Notes, fmt.Sprintf("probe %s failed: %v", p.name(), err))
				continue
			}
			for _, o := range obs {
				if _, ok := samples[o.Probe]; !ok {
					order = append(order, o.Probe)
				}
				samples[o.Probe] = append(samples[o.Probe], o)
			}
		}
		if ctx.Err() != nil {
			if round == 0 {
				return nil, fmt.Errorf("engine %s: the first round of probes did not finish within --max-duration %v (raise it, or check that the engine is idle)", cfg.Engine, cfg.MaxDuration)
			}
			res.Notes = append(res.Notes, fmt.Sprintf("round %d cut short by --max-duration %v", round+1, cfg.MaxDuration))
			break
		}
		res.Rounds++
		lastRound = time.Since(t0)
		log.Info("probe round done", "round", round+1, "took", lastRound.Round(time.Millisecond))
	}
	if r.cachedUnreported {
		res.Notes = append(res.Notes, "usage.prompt_tokens_details.cached_tokens is not reported (vLLM: --enable-prompt-tokens-details): warm prompts are assumed to hit their whole prefix in 16-token blocks")
	}
	obs := make([]Observation, 0, len(order))
	for _, name := range order {
		obs = append(obs, fastest(samples[name]))
	}
	if err := res.fit(obs, cfg); err != nil {
		return nil, fmt.Errorf("engine %s: %w", cfg.Engine, err)
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// discover reads the model and its context limit, measures the prompt
// tokens per word and checks the request extensions; it returns the
// longest prompt the plan may send.
func (r *runner) discover(ctx context.Context, cfg Config, res *Result, log *slog.Logger) (int, error) {
	dctx, cancel := context.WithTimeout(ctx, min(discoveryTimeout, cfg.RequestTimeout))
	defer cancel()
	models, err := r.c.models(dctx)
	if err != nil {
		return 0, err
	}
	maxLen := 0
	for _, m := range models {
		if cfg.Model == "" || m.ID == cfg.Model {
			r.model, maxLen = m.ID, m.MaxModelLen
			break
		}
	}
	if r.model == "" {
		ids := make([]string, len(models))
		for i, m := range models {
			ids[i] = m.ID
		}
		if cfg.Model == "" {
			return 0, errors.New("/v1/models lists no model")
		}
		return 0, fmt.Errorf("model %q is not served; /v1/models lists %q", cfg.Model, ids)
	}
	res.Model = r.model
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	r.gen = &promptGen{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), tokensPerWord: 1, bos: 1}
	const words = 256
	n1, ok, err := r.c.tokenize(dctx, r.model, r.gen.words(words))
	if err != nil {
		return 0, err
	}
	if ok {
		n2, _, err := r.c.tokenize(dctx, r.model, r.gen.words(2*words))
		if err != nil {
			return 0, err
		}
		r.gen.tokensPerWord = max(0.25, float64(n2-n1)/words)
		r.gen.bos = max(0, float64(n1)-words*r.gen.tokensPerWord)
	}
	// The first completion checks the extensions and warms the engine up
	// (its first requests are slower: lazy initialisation, CUDA graphs).
	s, err := r.c.complete(dctx, r.model, r.gen.words(words), 2)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusBadRequest {
		log.Warn("engine rejects ignore_eos/return_token_ids; probing without them", "err", err)
		res.Notes = append(res.Notes, "the engine rejected ignore_eos and return_token_ids: decodes may stop early, and each event counts as one token")
		r.c.extras = false
		s, err = r.c.complete(dctx, r.model, r.gen.words(words), 2)
	}
	if err != nil {
		return 0, err
	}
	if !ok {
		r.gen.tokensPerWord = max(0.25, float64(s.PromptTokens-1)/words)
		res.Notes = append(res.Notes, "no /tokenize: prompt sizes estimated from usage.prompt_tokens")
	}
	for range 2 {
		if _, err := r.c.complete(dctx, r.model, r.gen.words(64), 2); err != nil {
			return 0, err
		}
	}
	maxPrompt := 4 * cfg.StepTokenBudget
	if maxLen > 0 {
		maxPrompt = min(maxPrompt, maxLen-decodeTokens-16)
	}
	if maxPrompt < 64 {
		return 0, fmt.Errorf("max_model_len %d leaves no room for the probes", maxLen)
	}
	return maxPrompt, nil
}

// fastest returns the fastest repetition of one probe, with the number of
// repetitions and their spread. The probes run alone on an idle engine, so
// the host (scheduling, GC, the network, a simulator falling behind its
// timeline) can only add time to the engine's own: the fastest repetition
// is the least disturbed estimate. (A decode step time is already a robust
// slope over many events, whose own error is small and of either sign.)
func fastest(reps []Observation) Observation {
	best := reps[0]
	ms := make([]time.Duration, len(reps))
	for i, o := range reps {
		ms[i] = o.Measured
		if o.Measured < best.Measured {
			best = o
		}
	}
	best.Samples = len(reps)
	best.Spread = median(ms) - best.Measured
	return best
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// fit fits the constants to obs and fills the result.
func (res *Result) fit(obs []Observation, cfg Config) error {
	opts := fitOptions{budget: cfg.StepTokenBudget, prior: paramsOf(cfg.Prior)}
	multiStep, ttft, linear, warm := false, 0, false, false
	contexts := map[int]bool{}
	for _, o := range obs {
		switch o.Kind {
		case KindTTFT:
			ttft++
			n := o.PromptTokens - max(0, min(o.CachedTokens, o.PromptTokens-1))
			multiStep = multiStep || n > cfg.StepTokenBudget
			linear = linear || n >= 1024
			warm = warm || o.CachedTokens >= 1024
		case KindStep:
			contexts[o.DecodeContext] = true
		}
	}
	if ttft < 4 || !linear {
		return fmt.Errorf("too few probes succeeded to fit (%d prompts, none of 1,024 tokens or more: %v); see the warnings above", ttft, !linear)
	}
	if !multiStep {
		opts.fixed[pT0] = true
		res.Fixed = append(res.Fixed, paramNames[pT0])
		res.Notes = append(res.Notes, "no prompt was longer than the step budget, so step_overhead cannot be told from request_overhead: step_overhead keeps the prior's value")
	}
	if len(contexts) < 2 {
		opts.fixed[pKV] = true
		res.Fixed = append(res.Fixed, paramNames[pKV])
		res.Notes = append(res.Notes, "fewer than two decode probes succeeded: kv_read_per_token_ns keeps the prior's value")
	}
	if !warm {
		opts.fixed[pHost] = true
		res.Notes = append(res.Notes, "no warm probe hit 1,024 cached tokens or more: the host's time per prompt token cannot be told from prefill and is taken as 0")
	}
	p, _, err := fitParams(obs, opts)
	if err != nil {
		return err
	}
	if p[pInvR] <= 0 {
		return errors.New("fit: the linear term came out 0 (linear_tok_per_sec infinite): the long prompts did not take longer than short ones; is the engine shared with other traffic?")
	}
	res.Cost = costConfig(cfg.Prior, p, cfg.StepTokenBudget)
	rc := route.DefaultConfig()
	rc.Cost = res.Cost
	if err := rc.Validate(); err != nil {
		return fmt.Errorf("fit: %w", err)
	}
	res.HostPerPromptTokenNS = round4(p[pHost])
	fitted := paramsOf(res.Cost)
	fitted[pHost] = res.HostPerPromptTokenNS
	res.Observations = obs
	res.Predicted = make([]time.Duration, len(obs))
	sum := 0.0
	for i, o := range obs {
		pred := predict(o, cfg.StepTokenBudget, fitted)
		res.Predicted[i] = time.Duration(pred)
		rel := (pred - float64(o.Measured)) / float64(o.Measured)
		sum += rel * rel
		res.MaxRelErr = max(res.MaxRelErr, math.Abs(rel))
	}
	res.RMSRelErr = math.Sqrt(sum / float64(len(obs)))
	res.Notes = append(res.Notes, plausibility(paramsOf(cfg.Prior), fitted, opts.fixed, res.RMSRelErr)...)
	return nil
}

// farFromPrior is how many times larger or smaller than the prior a fitted
// constant may be before the result warns about it: the latency model's
// deployments (an 8B model on an L4 to a 70B one on 8 H100s) span about 10×
// per constant.
const farFromPrior = 20

// plausibility returns warnings about a fit that is poor or far from the
// prior: usually an engine that was not idle or a wrong step budget.
func plausibility(prior, fitted params, fixed [numParams]bool, rms float64) []string {
	var notes []string
	for j := range numParams {
		if fixed[j] || prior[j] <= 0 {
			continue
		}
		if r := fitted[j] / prior[j]; r > farFromPrior || r < 1.0/farFromPrior {
			notes = append(notes, fmt.Sprintf("%s came out %.3g× the prior's: check that the engine was idle and --step-token-budget", paramNames[j], r))
		}
	}
	if rms > 0.1 {
		notes = append(notes, fmt.Sprintf("the model fits poorly (RMS error %.0f%%): the engine may not follow the per-step model, or was busy", 100*rms))
	}
	return notes
}
