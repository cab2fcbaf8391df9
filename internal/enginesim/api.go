package enginesim

import (
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// This file is the contract between the simulator's parts: the engine core
// (scheduler, prefix cache, latency model, metrics), the HTTP front end and the
// KV-event publisher. Each part is built against these types only.

// Request is one generation request submitted to the engine core.
type Request struct {
	// ID is the engine request id (the response id without its prefix).
	ID string
	// Prompt is the prompt's token ids, after the chat template and special tokens.
	Prompt []uint32
	// Seed starts the block-hash chain: kvblock.NewSeed(model, lora, cacheSalt).
	Seed kvblock.Hash
	// LoRA is the adapter name, or "" for the base model (carried into KV events).
	LoRA string
	// MaxTokens caps the output length (finish reason "length").
	MaxTokens int
	// MinTokens is the number of tokens generated before EOS or stop token ids
	// may end the sequence.
	MinTokens int
	// IgnoreEOS keeps generating past EOS until MaxTokens.
	IgnoreEOS bool
	// StopTokenIDs end the sequence (finish reason "stop") when generated,
	// after MinTokens. EOS is handled by the Generator, not listed here.
	StopTokenIDs []uint32
	// Generate returns the i-th output token (i from 0). It must be
	// deterministic and cheap; the engine calls it from its step loop. The
	// engine ends the sequence with "stop" when it returns EOS (and IgnoreEOS is
	// false and i >= MinTokens).
	Generate func(i int) uint32
	// EOS is the end-of-sequence token id.
	EOS uint32
	// Arrival is when the front end received the request (for queue metrics).
	Arrival time.Time
}

// Output is what one engine step produced for one sequence. The engine sends
// an Output for every step in which the sequence got tokens, and a final one
// with Finished set.
type Output struct {
	// Tokens generated in this step (one per decode step; none on the final
	// Output of an aborted sequence).
	Tokens []uint32
	// Finished is set on the last Output of the sequence.
	Finished bool
	// FinishReason is "stop", "length" or "abort" when Finished.
	FinishReason string
	// PromptTokens is the prompt length; CachedTokens the prompt tokens served
	// from the prefix cache (block-aligned), as the engine reports them in
	// usage.prompt_tokens_details.cached_tokens. Both are set on every Output.
	PromptTokens, CachedTokens int
	// Time is the engine's (virtual) time at the end of the step.
	Time time.Time
}

// Stream is a submitted sequence's output. Out is closed after the Output with
// Finished set. Abort ends the sequence at once (its slot and blocks are freed
// before the next step), with finish reason "abort".
type Stream struct {
	Out <-chan Output
	// Abort ends the sequence; reason is "abort" for a client that went away,
	// or "stop" when the front end matched a stop string. Idempotent.
	Abort func(reason string)
}

// KVEventSink receives the prefix cache's events, in vLLM's order and
// granularity, from the engine's step loop. Implementations must not block.
type KVEventSink interface {
	// BlockStored reports blocks of one request that became full and cached in
	// this step. Hashes are engine hashes (what the sim publishes as
	// block_hashes); parent is the engine hash of the block before the first
	// one, or nil at token 0. tokens holds exactly the blocks' tokens.
	BlockStored(hashes []uint64, parent *uint64, tokens []uint32, blockSize int, lora string)
	// BlockRemoved reports one evicted block.
	BlockRemoved(hash uint64)
	// AllBlocksCleared reports a successful prefix-cache reset.
	AllBlocksCleared()
	// EndStep closes the step: the events since the last EndStep form one batch
	// with timestamp ts (nothing is sent for a step without events).
	EndStep(ts time.Time)
}
