package route

import (
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// Request is what a policy knows about one request.
type Request struct {
	// Model is the (alias-resolved) model name.
	Model string
	// Hashes are the chained block hashes of the prompt (kvblock.Hashes).
	Hashes []kvblock.Hash
	// Prompt, when set, is Hashes prepared once for the candidates' indexes
	// (see PromptIndex); it must have been prepared from exactly Hashes (a
	// Prompt whose Len differs from len(Hashes) is ignored). Nil: every
	// index is asked with Hashes.
	Prompt PreparedPrompt
	// BlockSize is the block size Hashes were computed with (0: 16).
	BlockSize int
	// PromptTokens is the prompt length in tokens (0: len(Hashes)×BlockSize).
	PromptTokens int
	// OutputTokens is the request's bound on its output tokens, its
	// max_tokens (0: unknown). cost_model's KV memory bound reserves
	// min(OutputTokens, Cost.ExpectedOutputTokens) for its output.
	OutputTokens int
	// Now is the decision time, for staleness and the overlay (zero: the
	// wall clock).
	Now time.Time
	// TextPrefix reports whether Hashes are a text prefix identity
	// (kvblock.TextHasher: chained hashes of fixed-size chunks of the
	// prompt's text, for a model without a tokenizer) rather than engine
	// block hashes, and PromptTokens an estimate. No summary holds such
	// hashes: the candidates' summaries are not asked (each counts as
	// unknown, so the prefix's prefix_hash owner is assumed to hold its
	// first blocks), block sizes are not compared, and the overlay keeps
	// the placement for OverlayConfig.TextTTL.
	TextPrefix bool
	// Turn is where the request stands in its conversation, as its
	// messages show: a first turn holds nothing of its own in any replica
	// and goes where its later turns will find their context, so cost_model
	// weighs the replicas' KV memory in choosing it
	// (CostConfig.HotPrefixQueueWait), as far as this model's traffic has
	// later turns (costModel.turns). TurnUnknown when not known.
	Turn Turn
	// Exclude lists candidate indices not to pick (replicas already tried by
	// a retry). A request whose every eligible candidate is excluded gets
	// ErrNoCandidate.
	Exclude []int
	// DryRun asks for the decision alone, as explain does: the policy
	// records nothing (no overlay placement, no sglang_cache_aware tree
	// entry) and round_robin does not take its turn. It still draws from the
	// policy's random generator for ties.
	DryRun bool
}

// Turn is where a request stands in its conversation (Request.Turn).
type Turn uint8

// Turns.
const (
	// TurnUnknown: not a chat request, or its messages were not read.
	TurnUnknown Turn = iota
	// TurnFirst: a chat request without an assistant message, which opens
	// a conversation.
	TurnFirst
	// TurnLater: a chat request with an assistant message, which
	// continues one.
	TurnLater
)

func (r *Request) blockSize() int {
	if r.BlockSize > 0 {
		return r.BlockSize
	}
	return kvblock.DefaultBlockSize
}

func (r *Request) promptTokens() int {
	if r.PromptTokens > 0 {
		return r.PromptTokens
	}
	if n := len(r.Hashes) * r.blockSize(); n > 0 {
		return n
	}
	return 1
}

func (r *Request) excluded(i int) bool {
	for _, x := range r.Exclude {
		if x == i {
			return true
		}
	}
	return false
}
