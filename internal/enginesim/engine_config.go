package enginesim

import (
	"errors"
	"fmt"

	"github.com/inferrail/inferrail/internal/perfmodel"
)

// EngineConfig configures one simulated engine core (one data-parallel rank).
type EngineConfig struct {
	// Model is the served model name (metrics label model_name).
	Model string
	// Rank is the data-parallel rank (metrics label engine="<rank>").
	Rank int
	// BlockSize is the KV block size in tokens (vLLM --block-size).
	BlockSize int
	// NumGPUBlocks is the number of KV blocks (vLLM --num-gpu-blocks-override),
	// including vLLM's reserved null block: NumGPUBlocks-1 blocks are usable.
	NumGPUBlocks int
	// MaxNumSeqs caps the number of running sequences (vLLM --max-num-seqs).
	MaxNumSeqs int
	// MaxNumBatchedTokens is the step token budget (vLLM --max-num-batched-tokens).
	MaxNumBatchedTokens int
	// MaxModelLen caps prompt plus output tokens (vLLM --max-model-len).
	MaxModelLen int
	// Latency is the step cost model.
	Latency LatencyModel
	// ZeroLatency makes every step take no time: the engine never sleeps,
	// runs steps back to back and ignores Latency.RequestOverhead (overhead
	// benchmarks and functional tests).
	ZeroLatency bool
}

// DefaultEngineConfig returns vLLM's defaults for Llama-3.1-8B on one H100
// (docs/perf-model.md).
func DefaultEngineConfig() EngineConfig {
	d := perfmodel.Llama8BH100()
	return EngineConfig{
		BlockSize:           d.BlockSize,
		NumGPUBlocks:        d.NumGPUBlocks,
		MaxNumSeqs:          d.MaxNumSeqs,
		MaxNumBatchedTokens: d.StepTokenBudget,
		MaxModelLen:         131072,
		Latency:             DefaultLatencyModel(),
	}
}

// Validate reports every problem of c at once, each naming the field and
// its value.
func (c EngineConfig) Validate() error {
	var errs []error
	if c.Rank < 0 {
		errs = append(errs, fmt.Errorf("engine.rank must be >= 0, got %d", c.Rank))
	}
	if c.BlockSize <= 0 {
		errs = append(errs, fmt.Errorf("engine.block_size must be > 0, got %d", c.BlockSize))
	}
	if c.NumGPUBlocks < 2 {
		errs = append(errs, fmt.Errorf("engine.num_gpu_blocks must be >= 2 (block 0 is reserved), got %d", c.NumGPUBlocks))
	}
	if c.MaxNumSeqs <= 0 {
		errs = append(errs, fmt.Errorf("engine.max_num_seqs must be > 0, got %d", c.MaxNumSeqs))
	}
	if c.MaxNumBatchedTokens <= 0 {
		errs = append(errs, fmt.Errorf("engine.max_num_batched_tokens must be > 0, got %d", c.MaxNumBatchedTokens))
	}
	if c.MaxModelLen <= 1 {
		errs = append(errs, fmt.Errorf("engine.max_model_len must be > 1, got %d", c.MaxModelLen))
	}
	if !c.ZeroLatency {
		errs = append(errs, c.Latency.validate("engine.latency", nil)...)
	}
	return errors.Join(errs...)
}

// kvTokens returns how many tokens the usable blocks hold.
func (c EngineConfig) kvTokens() int { return (c.NumGPUBlocks - 1) * c.BlockSize }

// PromptTooLongError is returned by Engine.Submit when a request can never be
// served: its prompt plus max tokens exceed MaxModelLen, or its sequence can
// never fit in the KV cache. The front end maps it to HTTP 400.
type PromptTooLongError struct {
	// PromptTokens and MaxTokens are the request's.
	PromptTokens, MaxTokens int
	// MaxModelLen is the engine's context limit.
	MaxModelLen int
	// KVCapacity is the number of tokens the engine's KV cache holds; it is
	// set only when the KV cache, not MaxModelLen, is the limit.
	KVCapacity int
}

// Error returns a message in the words vLLM uses.
func (e *PromptTooLongError) Error() string {
	switch {
	case e.KVCapacity > 0:
		return fmt.Sprintf("this request needs %d tokens of KV cache (%d in the prompt, %d in the completion) but the KV cache holds only %d tokens",
			e.PromptTokens+e.MaxTokens-1, e.PromptTokens, e.MaxTokens, e.KVCapacity)
	case e.PromptTokens >= e.MaxModelLen:
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.",
			e.MaxModelLen, e.PromptTokens)
	default:
		return fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
			e.MaxTokens, e.MaxModelLen, e.PromptTokens, e.MaxTokens, e.MaxModelLen, e.PromptTokens)
	}
}

// ErrInvalidRequest is wrapped by Engine.Submit for a request that is
// malformed (no prompt, no generator, MaxTokens < 1).
var ErrInvalidRequest = errors.New("invalid request")

// ErrEngineStopped is returned by Engine.Submit after Run has returned.
var ErrEngineStopped = errors.New("engine stopped")
