package enginesim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/openai"
)

// genRequest is a validated generation request, chat or completion.
type genRequest struct {
	chat    bool
	params  *openai.Params
	prompt  []uint32
	id      string // response id, with its chatcmpl-/cmpl- prefix
	baseID  string
	keyID   string // the client's id, for generationKey ("" if none)
	max     int
	created int64
	role    string // chat: the response role
}

// requestIDs returns the base id and whether the client chose it: the
// X-Request-Id header, else the body's request_id, else a random id.
func requestIDs(r *http.Request, bodyID string) (string, bool) {
	if h := r.Header.Get("X-Request-Id"); h != "" {
		return h, true
	}
	if bodyID != "" {
		return bodyID, true
	}
	return randomHex(), false
}

// checkCommon rejects what the simulator cannot do faithfully, naming the
// parameter, and checks the length limits like vLLM.
func (s *frontEnd) checkCommon(p *openai.Params, raw map[string]json.RawMessage) *openai.Error {
	if so, ok := raw["stream_options"]; ok && !p.Stream && isNonEmptyObject(so) {
		return openai.ValueError("stream_options", "Stream options can only be defined when `stream=True`.")
	}
	switch {
	case p.N != nil && *p.N != 1:
		return openai.BadRequest("n", "n=%d is not supported by the simulator: it generates one choice per request", *p.N)
	case p.BestOf != nil && *p.BestOf > 1:
		return openai.BadRequest("best_of", "best_of=%d is not supported by the simulator", *p.BestOf)
	case p.UseBeamSearch:
		return openai.BadRequest("use_beam_search", "beam search is not supported by the simulator")
	case p.Echo:
		return openai.BadRequest("echo", "echo is not supported by the simulator")
	case p.PromptLogprobs != nil:
		return openai.BadRequest("prompt_logprobs", "prompt_logprobs are not supported by the simulator")
	case p.ResponseFormatType != "" && p.ResponseFormatType != "text":
		return openai.BadRequest("response_format", "response_format type %q (structured output) is not supported by the simulator", p.ResponseFormatType)
	case p.Priority != 0:
		return openai.BadRequest("priority", "Priority scheduling is not enabled.")
	}
	for _, name := range []string{"structured_outputs", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "logit_bias", "allowed_token_ids", "bad_words", "logits_processors", "kv_transfer_params"} {
		if v, ok := raw[name]; ok && !isNullOrEmpty(v) {
			return openai.BadRequest(name, "%s is not supported by the simulator", name)
		}
	}
	if p.MaxTokens != nil && *p.MaxTokens < 1 {
		return openai.BadRequest(p.MaxTokensParam, "max_tokens must be at least 1, got %d.", *p.MaxTokens)
	}
	if p.MinTokens < 0 {
		return openai.BadRequest("min_tokens", "min_tokens must be greater than or equal to 0, got %d.", p.MinTokens)
	}
	if p.MaxTokens != nil && p.MinTokens > *p.MaxTokens {
		return openai.BadRequest("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d.", *p.MaxTokens, p.MinTokens)
	}
	return nil
}

func isNonEmptyObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return !isEmptyObject(b)
		default:
			return !isNullOrEmpty(b)
		}
	}
	return false
}

func isEmptyObject(b []byte) bool {
	n := 0
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			n++
		}
	}
	return n == 2
}

func isNullOrEmpty(b []byte) bool {
	var nonSpace []byte
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			nonSpace = append(nonSpace, c)
		}
	}
	switch string(nonSpace) {
	case "null", "false", "[]", "{}", `""`, "0":
		return true
	}
	return false
}

// resolveMaxTokens applies vLLM's length rules: the default is what is left
// of max_model_len; prompt plus max tokens may not exceed it.
func (s *frontEnd) resolveMaxTokens(p *openai.Params, promptLen int) (int, *openai.Error) {
	maxLen := s.cfg.Engine.MaxModelLen
	requested := 0
	if p.MaxTokens != nil {
		requested = *p.MaxTokens
	}
	if promptLen+requested > maxLen || promptLen >= maxLen {
		return 0, &openai.Error{
			Status: http.StatusBadRequest, Type: openai.TypeBadRequest, Param: "input_tokens",
			Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)",
				maxLen, requested, promptLen, promptLen+requested, promptLen),
		}
	}
	if p.MaxTokens == nil {
		return maxLen - promptLen, nil
	}
	return requested, nil
}

// checkPromptIDs rejects token ids outside the vocabulary, as vLLM does.
func (s *frontEnd) checkPromptIDs(ids []uint32) *openai.Error {
	for _, id := range ids {
		if _, ok := s.tok.TokenText(id, false); !ok {
			return openai.BadRequest("prompt", "Token id %d is out of vocabulary", id)
		}
	}
	return nil
}

// responseModel returns the model name a response carries: the adapter's
// for a LoRA request (as vLLM answers), else the served model's.
func (s *frontEnd) responseModel(g *genRequest) string {
	if s.loras[g.params.Model] {
		return g.params.Model
	}
	return s.cfg.modelName()
}

// submit picks a rank and submits g; the caller must call done when the
// sequence is over.
func (s *frontEnd) submit(g *genRequest) (st *Stream, done func(), e *openai.Error) {
	rank := s.pickRank()
	rank.inflight.Add(1)
	p := g.params
	key := generationKey(g.keyID, g.prompt)
	var lora string
	if s.loras[p.Model] {
		lora = p.Model
	}
	req := &Request{
		ID:           g.baseID + "-" + randomHex()[:8],
		Prompt:       g.prompt,
		Seed:         kvblock.NewSeed(s.cfg.modelName(), lora, p.CacheSalt),
		LoRA:         lora,
		MaxTokens:    g.max,
		MinTokens:    p.MinTokens,
		IgnoreEOS:    p.IgnoreEOS,
		StopTokenIDs: p.StopTokenIDs,
		Generate:     tokenGenerator(key, naturalLength(key), p.IgnoreEOS, s.tok.Vocabulary(), s.tok.EOS()),
		EOS:          s.tok.EOS(),
		Arrival:      time.Now(),
	}
	st, err := rank.core.Submit(req)
	if err != nil {
		rank.inflight.Add(-1)
		var tooLong *PromptTooLongError
		if errors.As(err, &tooLong) {
			return nil, nil, openai.BadRequest("input_tokens", "%v", err)
		}
		if errors.Is(err, ErrEngineStopped) {
			return nil, nil, openai.Unavailable("%v", err)
		}
		return nil, nil, openai.BadRequest("", "%v", err)
	}
	return st, func() { rank.inflight.Add(-1) }, nil
}

// drain reads a stream's remaining outputs in the background so an
// abandoned sequence never holds the engine's channel.
func drainStream(st *Stream) {
	go func() {
		for range st.Out {
		}
	}()
}

// usage builds the usage object. full is for non-streaming bodies (null
// details, every details field); otherwise details are absent unless set.
func (s *frontEnd) usage(prompt, completion, cached int, full bool) openai.Usage {
	u := openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	switch {
	case s.cfg.EnablePromptTokensDetails && cached > 0:
		d := openai.PromptTokensDetails{CachedTokens: cached}
		if full {
			d.CreatedCacheTokens = openai.Null[int]()
			d.MultimodalTokens = openai.Null[map[string]int]()
		}
		u.PromptTokensDetails = openai.Some(d)
	case full:
		u.PromptTokensDetails = openai.Null[openai.PromptTokensDetails]()
	}
	return u
}

// streamUsageFlags mirrors vLLM's should_include_usage.
func streamUsageFlags(p *openai.Params) (include, continuous bool) {
	if p.StreamOptions == nil {
		return false, false
	}
	include = p.StreamOptions.IncludeUsage
	return include, include && p.StreamOptions.ContinuousUsageStats
}

func strPtr(s string) *string { return &s }
