// Package calibrate fits the balancer's cost model (route.CostConfig) to a
// running OpenAI-compatible engine: `inferrail calibrate --engine URL`.
//
// Run sends a short probe plan to the engine, alone: streaming completions
// with max_tokens small and ignore_eos, timed at the first token-bearing
// event of the stream (not at the response headers, which engines send at
// admission, before the prefill). Cold prompts of 16 tokens to twice the
// step budget, each with a unique random prefix; warm prompts that re-send
// a prefix with new suffixes (usage.prompt_tokens_details.cached_tokens
// says how much hit); and concurrent long decodes, whose inter-token gaps
// time the decode steps. Every probe is repeated and its fastest
// repetition kept. The constants of the per-step model of docs/design.md §8
//
//	t_step = T0 + max(W_floor, T_tok/R_lin) + A_att·Σ n_i(c_i + n_i/2) + A_kv·Σ ctx_j
//
// plus the per-request T_req are then fitted by relative least squares
// with every constant ≥ 0 (a hand-written Lawson–Hanson solver; the max()
// is handled by iterating on each step's regime). The Result carries the
// fitted CostConfig, the residual of every probe and what could not be
// identified; WriteYAML prints the cost_model block the balancer config
// accepts under models[].routing. docs/calibrate.md has the plan, the fit
// and its limits on real engines.
package calibrate
