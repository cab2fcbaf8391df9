package openai

import "encoding/json"

// Object names.
const (
	ObjectChatCompletion      = "chat.completion"
	ObjectChatCompletionChunk = "chat.completion.chunk"
	ObjectTextCompletion      = "text_completion"
	ObjectModel               = "model"
	ObjectList                = "list"
	ObjectModelPermission     = "model_permission"
)

// PromptTokensDetails is usage.prompt_tokens_details. vLLM fills only
// cached_tokens; the other fields are null in full dumps and absent in
// stream chunks.
type PromptTokensDetails struct {
	CachedTokens       int                      `json:"cached_tokens"`
	CreatedCacheTokens Optional[int]            `json:"created_cache_tokens,omitzero"`
	MultimodalTokens   Optional[map[string]int] `json:"multimodal_tokens,omitzero"`
}

// Usage is the usage object. PromptTokensDetails is null in non-streaming
// bodies without --enable-prompt-tokens-details and absent from stream chunks
// that do not carry it.
type Usage struct {
	PromptTokens        int                           `json:"prompt_tokens"`
	TotalTokens         int                           `json:"total_tokens"`
	CompletionTokens    int                           `json:"completion_tokens"`
	PromptTokensDetails Optional[PromptTokensDetails] `json:"prompt_tokens_details,omitzero"`
}

// CachedTokens returns usage.prompt_tokens_details.cached_tokens, and whether
// it was reported.
func (u Usage) CachedTokens() (int, bool) {
	d, ok := u.PromptTokensDetails.Get()
	return d.CachedTokens, ok
}

// ChatMessage is a chat response message (vLLM's ChatMessage).
type ChatMessage struct {
	Role         string          `json:"role"`
	Content      *string         `json:"content"`
	Refusal      *string         `json:"refusal"`
	Annotations  json.RawMessage `json:"annotations"`
	Audio        json.RawMessage `json:"audio"`
	FunctionCall json.RawMessage `json:"function_call"`
	ToolCalls    []any           `json:"tool_calls"`
	Reasoning    *string         `json:"reasoning"`
}

// ChatChoice is one choice of a chat completion.
type ChatChoice struct {
	Index        int             `json:"index"`
	Message      ChatMessage     `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   StopReason      `json:"stop_reason"`
	TokenIDs     []uint32        `json:"token_ids"`
}

// ChatCompletionResponse is a non-streaming chat completion body.
type ChatCompletionResponse struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	Choices           []ChatChoice    `json:"choices"`
	ServiceTier       *string         `json:"service_tier"`
	SystemFingerprint *string         `json:"system_fingerprint"`
	Usage             Usage           `json:"usage"`
	PromptLogprobs    json.RawMessage `json:"prompt_logprobs"`
	PromptTokenIDs    []uint32        `json:"prompt_token_ids"`
	KVTransferParams  json.RawMessage `json:"kv_transfer_params"`
}

// ChatDelta is a stream chunk's delta; absent fields are left out as vLLM
// does (exclude_unset).
type ChatDelta struct {
	Role    Optional[string] `json:"role,omitzero"`
	Content Optional[string] `json:"content,omitzero"`
}

// ChatChunkChoice is one choice of a chat stream chunk. StopReason and
// TokenIDs are absent until vLLM sets them.
type ChatChunkChoice struct {
	Index        int                  `json:"index"`
	Delta        ChatDelta            `json:"delta"`
	Logprobs     json.RawMessage      `json:"logprobs"`
	FinishReason *string              `json:"finish_reason"`
	StopReason   Optional[StopReason] `json:"stop_reason,omitzero"`
	TokenIDs     Optional[[]uint32]   `json:"token_ids,omitzero"`
}

// ChatCompletionChunk is one chat stream chunk.
type ChatCompletionChunk struct {
	ID             string             `json:"id"`
	Object         string             `json:"object"`
	Created        int64              `json:"created"`
	Model          string             `json:"model"`
	Choices        []ChatChunkChoice  `json:"choices"`
	Usage          Optional[Usage]    `json:"usage,omitzero"`
	PromptTokenIDs Optional[[]uint32] `json:"prompt_token_ids,omitzero"`
}

// CompletionChoice is one choice of a completion.
type CompletionChoice struct {
	Index          int             `json:"index"`
	Text           string          `json:"text"`
	Logprobs       json.RawMessage `json:"logprobs"`
	FinishReason   *string         `json:"finish_reason"`
	StopReason     StopReason      `json:"stop_reason"`
	TokenIDs       []uint32        `json:"token_ids"`
	PromptLogprobs json.RawMessage `json:"prompt_logprobs"`
	PromptTokenIDs []uint32        `json:"prompt_token_ids"`
}

// CompletionResponse is a non-streaming completion body.
type CompletionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	Choices           []CompletionChoice `json:"choices"`
	ServiceTier       *string            `json:"service_tier"`
	SystemFingerprint *string            `json:"system_fingerprint"`
	Usage             Usage              `json:"usage"`
	KVTransferParams  json.RawMessage    `json:"kv_transfer_params"`
}

// CompletionChunkChoice is one choice of a completion stream chunk (vLLM
// writes every field).
type CompletionChunkChoice struct {
	Index          int             `json:"index"`
	Text           string          `json:"text"`
	Logprobs       json.RawMessage `json:"logprobs"`
	FinishReason   *string         `json:"finish_reason"`
	StopReason     StopReason      `json:"stop_reason"`
	PromptTokenIDs []uint32        `json:"prompt_token_ids"`
	TokenIDs       []uint32        `json:"token_ids"`
}

// CompletionChunk is one completion stream chunk. Usage is null on ordinary
// chunks and absent from the final usage chunk's siblings only through
// Optional.
type CompletionChunk struct {
	ID      string                  `json:"id"`
	Object  string                  `json:"object"`
	Created int64                   `json:"created"`
	Model   string                  `json:"model"`
	Choices []CompletionChunkChoice `json:"choices"`
	Usage   Optional[Usage]         `json:"usage,omitzero"`
}

// StopReason is a choice's stop_reason: null, the stop string, or the stop
// token id.
type StopReason struct {
	// Str is the matched stop string, when IsStr.
	Str string
	// TokenID is the matched stop token id, when IsToken.
	TokenID        uint32
	IsStr, IsToken bool
}

// MarshalJSON writes null, a string or a number.
func (s StopReason) MarshalJSON() ([]byte, error) {
	switch {
	case s.IsStr:
		return json.Marshal(s.Str)
	case s.IsToken:
		return json.Marshal(s.TokenID)
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads null, a string or a number.
func (s *StopReason) UnmarshalJSON(b []byte) error {
	*s = StopReason{}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case string:
		s.Str, s.IsStr = x, true
	case float64:
		s.TokenID, s.IsToken = uint32(x), true
	}
	return nil
}

// ModelPermission is an entry of a ModelCard's permission list.
type ModelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

// NewModelPermission returns vLLM's default permission entry.
func NewModelPermission(id string, created int64) ModelPermission {
	return ModelPermission{ID: id, Object: ObjectModelPermission, Created: created, AllowSampling: true,
		AllowLogprobs: true, AllowView: true, Organization: "*"}
}

// ModelCard is one entry of GET /v1/models.
type ModelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        *string           `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen *int              `json:"max_model_len"`
	Permission  []ModelPermission `json:"permission"`
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelCard `json:"data"`
}

// TokenizeResponse is the body of POST /tokenize.
type TokenizeResponse struct {
	Count       int       `json:"count"`
	MaxModelLen int       `json:"max_model_len"`
	Tokens      []uint32  `json:"tokens"`
	TokenStrs   *[]string `json:"token_strs"`
}

// DetokenizeResponse is the body of POST /detokenize.
type DetokenizeResponse struct {
	Prompt string `json:"prompt"`
}

// VersionResponse is the body of GET /version.
type VersionResponse struct {
	Version string `json:"version"`
}
