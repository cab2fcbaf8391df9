package decisionlog

import "time"

// Record is one routing decision: one attempt of one request. It holds no
// prompt text, only its length.
type Record struct {
	// Seq numbers the records of this process from 1 (set by Log.Add).
	Seq uint64 `json:"seq"`
	// Time is when the decision was made.
	Time time.Time `json:"time"`
	// RequestID is the request's x-request-id.
	RequestID string `json:"request_id"`
	// Model is the alias-resolved model.
	Model string `json:"model"`
	// Policy is the model's routing policy.
	Policy string `json:"policy"`
	// Mode is proxy, or epp for a gateway's endpoint-picker stream.
	Mode string `json:"mode"`
	// Attempt counts the request's attempts from 1.
	Attempt int `json:"attempt"`
	// PromptTokens and PromptBlocks are the prompt's length in tokens and
	// full blocks (0: not tokenized).
	PromptTokens int `json:"prompt_tokens"`
	PromptBlocks int `json:"prompt_blocks"`
	// Turn is where a chat request stands in its conversation: "first" (no
	// assistant message) or "later" (absent: not a chat request, or not
	// read). cost_model moves a first turn to a roomier replica only as far
	// as the model's conversations have later turns (docs/routing.md).
	Turn string `json:"turn,omitempty"`
	// CachedTokens is the winner's predicted cached prompt tokens.
	CachedTokens int `json:"predicted_cached_tokens"`
	// Winner is the chosen replica ("" for a request the policy shed,
	// route.ErrOverloaded) and Reason why.
	Winner string `json:"winner"`
	Reason string `json:"reason"`
	// Score is the winner's score where the policy scores (route.Decision).
	Score *float64 `json:"score,omitempty"`
	// EstimatedTTFTMS is cost_model's estimate for the winner.
	EstimatedTTFTMS *float64 `json:"estimated_ttft_ms,omitempty"`
	// SummaryFallback reports whether a missing or stale summary made the
	// policy assume the prefix_hash owner holds the prefix.
	SummaryFallback bool `json:"summary_fallback,omitempty"`
	// DecisionUS is how long the decision took, in microseconds.
	DecisionUS float64 `json:"decision_us"`
	// Candidates is every replica serving the model, in the fleet's order.
	Candidates []Candidate `json:"candidates"`
}

// Candidate is one replica as the decision saw it.
type Candidate struct {
	// ID names the replica.
	ID string `json:"id"`
	// State is the fleet's health state (healthy, ejected, unhealthy, gone,
	// draining); Excluded reports that this request already tried it.
	State    string `json:"state"`
	Excluded bool   `json:"excluded,omitempty"`
	// InFlight, Pending and PrefillTokens are the work the load model sees
	// there (route.WorkOf): requests in flight, those still in prefill and
	// their uncached prompt tokens, from every balancer.
	InFlight      int   `json:"in_flight"`
	Pending       int   `json:"pending"`
	PrefillTokens int64 `json:"prefill_tokens"`
	// StepTokens is the part of PrefillTokens the load model places in the
	// engine step under way there (route.Work.StepTokens: this balancer's
	// own requests sent before the last step end it saw), and StepAgeMS
	// how long before the decision that step began (absent: no step end
	// seen yet).
	StepTokens int64    `json:"step_tokens,omitempty"`
	StepAgeMS  *float64 `json:"step_age_ms,omitempty"`
	// KVUsage is the engine's reported KV cache usage in [0,1] (absent:
	// no report).
	KVUsage *float64 `json:"kv_usage,omitempty"`
	// CachedTokens is the predicted cached prompt tokens (absent: the
	// policy predicts none for it).
	CachedTokens *int `json:"predicted_cached_tokens,omitempty"`
	// Score is its score (absent: the policy scores no candidate, or it was
	// not eligible).
	Score *float64 `json:"score,omitempty"`
	// EstimatedTTFTMS and QueueWaitMS are cost_model's estimate of its time
	// to first token and the queue wait part of it.
	EstimatedTTFTMS *float64 `json:"estimated_ttft_ms,omitempty"`
	QueueWaitMS     *float64 `json:"queue_wait_ms,omitempty"`
	// MemoryWaitMS is cost_model's estimated wait for KV memory there, part
	// of its estimated TTFT (absent: none); KVShort that it was short of
	// memory with no estimate of the wait, and skipped while another
	// replica had room.
	MemoryWaitMS *float64 `json:"memory_wait_ms,omitempty"`
	KVShort      bool     `json:"kv_short,omitempty"`
	// Answers is the followed answers there that the wait for KV memory
	// counts when it is short (route.AnswersOf): this balancer's streams
	// and the other balancers' as they sent them.
	Answers int `json:"answers,omitempty"`
	// LoadStale reports that its load report is older than the gossip's
	// load_max_age (route.Load.Stale): its load is this balancer's and the
	// peers' own counts alone, and its KV usage unknown.
	LoadStale bool `json:"load_stale,omitempty"`
}
