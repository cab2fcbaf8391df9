package openai

import (
	"encoding/json"
	"strings"
)

// StreamOptions is stream_options. IncludeUsage defaults to true when the
// object is present, as in vLLM.
type StreamOptions struct {
	IncludeUsage         bool
	ContinuousUsageStats bool
}

// Params are the request parameters a router, the simulator and the
// benchmark act on, common to chat and completions. Pointers are nil when the
// field is absent or null.
type Params struct {
	// Model is the requested model ("" when absent).
	Model         string
	Stream        bool
	StreamOptions *StreamOptions
	// MaxTokens is max_completion_tokens if set, else max_tokens.
	MaxTokens *int
	// MaxTokensParam names the field MaxTokens came from.
	MaxTokensParam string
	MinTokens      int
	IgnoreEOS      bool
	Stop           []string
	StopTokenIDs   []uint32
	N              *int
	BestOf         *int
	// TopLogprobs is top_logprobs (chat).
	TopLogprobs *int
	// PromptLogprobs is prompt_logprobs.
	PromptLogprobs *int
	Echo           bool
	UseBeamSearch  bool
	// CacheSalt is cache_salt ("" when absent).
	CacheSalt string
	// RequestID is the body's request_id ("" when absent).
	RequestID              string
	IncludeStopStrInOutput bool
	SkipSpecialTokens      bool
	ReturnTokenIDs         bool
	// Priority is the request priority (0 by default).
	Priority int
	// ResponseFormatType is response_format.type ("" when absent).
	ResponseFormatType string
}

// Message is one request message. Content holds the text: the string
// content, or the text parts joined with "\n" (as vLLM's "string" content
// format does).
type Message struct {
	Role    string
	Content string
	// NonText reports content parts other than text (images, audio...).
	NonText bool
	// Raw is the message as sent.
	Raw json.RawMessage
}

// ChatCompletionRequest is a parsed POST /v1/chat/completions body. Raw keeps
// every top-level field as sent, known or not.
type ChatCompletionRequest struct {
	Params
	Messages []Message
	// Logprobs is the chat form of logprobs (a boolean).
	Logprobs             bool
	AddGenerationPrompt  bool
	ContinueFinalMessage bool
	AddSpecialTokens     bool
	Tools                []json.RawMessage
	ToolChoice           json.RawMessage
	ChatTemplate         string
	ChatTemplateKwargs   map[string]json.RawMessage
	Raw                  map[string]json.RawMessage
}

// PromptKind tells the forms of a completion prompt apart.
type PromptKind int

// Prompt forms.
const (
	PromptText       PromptKind = iota // a string
	PromptTexts                        // a list of strings
	PromptTokens                       // a list of token ids
	PromptTokenLists                   // a list of lists of token ids
)

// CompletionRequest is a parsed POST /v1/completions body.
type CompletionRequest struct {
	Params
	PromptKind PromptKind
	// Prompts holds the text prompts (one for PromptText).
	Prompts []string
	// TokenPrompts holds the token-id prompts (one for PromptTokens).
	TokenPrompts [][]uint32
	// Logprobs is the completions form of logprobs (an integer), nil when absent.
	Logprobs         *int
	Suffix           string
	AddSpecialTokens bool
	Raw              map[string]json.RawMessage
}

// NumPrompts returns how many prompts the request carries.
func (r *CompletionRequest) NumPrompts() int {
	if r.PromptKind == PromptText || r.PromptKind == PromptTexts {
		return len(r.Prompts)
	}
	return len(r.TokenPrompts)
}

func parseParams(f *fields, p *Params, maxTokensDefault *int) {
	p.Model, _ = f.str("model")
	p.Stream = f.boolean("stream", false)
	if so := f.object("stream_options"); so != nil {
		sf := &fields{m: so}
		p.StreamOptions = &StreamOptions{
			IncludeUsage:         sf.boolean("include_usage", true),
			ContinuousUsageStats: sf.boolean("continuous_usage_stats", false),
		}
		if sf.err != nil && f.err == nil {
			sf.err.Param = "body.stream_options." + strings.TrimPrefix(sf.err.Param, "body.")
			f.err = sf.err
		}
	}
	if v, ok := f.integer("max_completion_tokens"); ok {
		p.MaxTokens, p.MaxTokensParam = &v, "max_completion_tokens"
	} else if v, ok := f.integer("max_tokens"); ok {
		p.MaxTokens, p.MaxTokensParam = &v, "max_tokens"
	} else if maxTokensDefault != nil {
		v := *maxTokensDefault
		p.MaxTokens, p.MaxTokensParam = &v, "max_tokens"
	}
	p.MinTokens, _ = f.integer("min_tokens")
	p.IgnoreEOS = f.boolean("ignore_eos", false)
	p.Stop = f.stop("stop")
	p.StopTokenIDs = f.tokenIDs("stop_token_ids")
	if v, ok := f.integer("n"); ok {
		p.N = &v
	}
	if v, ok := f.integer("best_of"); ok {
		p.BestOf = &v
	}
	if v, ok := f.integer("prompt_logprobs"); ok {
		p.PromptLogprobs = &v
	}
	p.Echo = f.boolean("echo", false)
	p.UseBeamSearch = f.boolean("use_beam_search", false)
	if s, ok := f.str("cache_salt"); ok {
		p.CacheSalt = s
		if s == "" {
			f.fail("cache_salt", "value_error", "Value error, Parameter 'cache_salt' must be a non-empty string if provided.")
		}
	}
	p.RequestID, _ = f.str("request_id")
	p.IncludeStopStrInOutput = f.boolean("include_stop_str_in_output", false)
	p.SkipSpecialTokens = f.boolean("skip_special_tokens", true)
	p.ReturnTokenIDs = f.boolean("return_token_ids", false)
	p.Priority, _ = f.integer("priority")
	if rf := f.object("response_format"); rf != nil {
		rff := &fields{m: rf}
		p.ResponseFormatType, _ = rff.str("type")
	}
	for _, name := range []string{"temperature", "top_p", "frequency_penalty", "presence_penalty", "min_p", "repetition_penalty"} {
		f.number(name)
	}
	f.integer("top_k")
	f.integer("seed")
}

// ParseChatCompletionRequest parses a chat completions body. Errors are
// *Error values shaped like vLLM's (400, naming the parameter).
func ParseChatCompletionRequest(body []byte) (*ChatCompletionRequest, *Error) {
	f, e := newFields(body)
	if e != nil {
		return nil, e
	}
	r := &ChatCompletionRequest{Raw: f.m}
	parseParams(f, &r.Params, nil)
	if v, ok := f.integer("top_logprobs"); ok {
		r.TopLogprobs = &v
	}
	r.Logprobs = f.boolean("logprobs", false)
	r.AddGenerationPrompt = f.boolean("add_generation_prompt", true)
	r.ContinueFinalMessage = f.boolean("continue_final_message", false)
	r.AddSpecialTokens = f.boolean("add_special_tokens", false)
	r.Tools, _ = f.list("tools")
	r.ToolChoice, _ = f.raw("tool_choice")
	r.ChatTemplate, _ = f.str("chat_template")
	r.ChatTemplateKwargs = f.object("chat_template_kwargs")
	msgs, ok := f.list("messages")
	if !ok && f.err == nil {
		if _, present := f.m["messages"]; present {
			f.fail("messages", "list_type", "Input should be a valid list")
		} else {
			f.fail("messages", "missing", "Field required")
		}
	}
	for i, raw := range msgs {
		m, err := parseMessage(raw)
		if err != "" {
			f.fail("messages."+itoa(i), "value_error", err)
			break
		}
		r.Messages = append(r.Messages, m)
	}
	if f.err != nil {
		return nil, f.err
	}
	return r, nil
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func parseMessage(raw json.RawMessage) (Message, string) {
	var m struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return Message{}, "Input should be a valid dictionary"
	}
	if m.Role == nil {
		return Message{}, "Field required: role"
	}
	msg := Message{Role: *m.Role, Raw: raw}
	if len(m.Content) == 0 || isNull(m.Content) {
		return msg, ""
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		msg.Content = s
		return msg, ""
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return Message{}, "Input should be a valid string or list of content parts"
	}
	var texts []string
	for _, p := range parts {
		switch {
		case p.Type == "text" || (p.Type == "" && p.Text != nil):
			if p.Text == nil {
				return Message{}, "Field required: text"
			}
			texts = append(texts, *p.Text)
		default:
			msg.NonText = true
		}
	}
	msg.Content = strings.Join(texts, "\n")
	return msg, ""
}

// completionMaxTokensDefault is vLLM's CompletionRequest.max_tokens default.
var completionMaxTokensDefault = 16

// ParseCompletionRequest parses a completions body. As in vLLM, max_tokens
// defaults to 16.
func ParseCompletionRequest(body []byte) (*CompletionRequest, *Error) {
	f, e := newFields(body)
	if e != nil {
		return nil, e
	}
	r := &CompletionRequest{Raw: f.m}
	parseParams(f, &r.Params, &completionMaxTokensDefault)
	if v, ok := f.integer("logprobs"); ok {
		r.Logprobs = &v
	}
	r.Suffix, _ = f.str("suffix")
	r.AddSpecialTokens = f.boolean("add_special_tokens", true)
	raw, ok := f.raw("prompt")
	switch {
	case f.err != nil:
	case !ok:
		if f.present("prompt_embeds") {
			f.fail("prompt_embeds", "value_error", "prompt_embeds are not supported by this server.")
			break
		}
		return nil, BadRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
	default:
		if !parsePrompt(r, raw) {
			f.fail("prompt", "union_type", "Input should be a valid string, a list of strings, a list of integers or a list of lists of integers")
		} else if r.PromptKind == PromptText && r.Prompts[0] == "" {
			return nil, BadRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return r, nil
}

func parsePrompt(r *CompletionRequest, raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		r.PromptKind, r.Prompts = PromptText, []string{s}
		return true
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return false
	}
	if len(items) == 0 {
		r.PromptKind, r.TokenPrompts = PromptTokens, [][]uint32{{}}
		return true
	}
	if ids, ok := parseTokenIDs(raw); ok {
		r.PromptKind, r.TokenPrompts = PromptTokens, [][]uint32{ids}
		return true
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		r.PromptKind, r.Prompts = PromptTexts, texts
		return true
	}
	lists := make([][]uint32, 0, len(items))
	for _, it := range items {
		ids, ok := parseTokenIDs(it)
		if !ok {
			return false
		}
		lists = append(lists, ids)
	}
	r.PromptKind, r.TokenPrompts = PromptTokenLists, lists
	return true
}

// TokenizeRequest is a parsed POST /tokenize body, in its completion form
// (Prompt) or chat form (Messages).
type TokenizeRequest struct {
	Model                string
	Prompt               string
	Messages             []Message
	IsChat               bool
	AddSpecialTokens     bool
	AddGenerationPrompt  bool
	ContinueFinalMessage bool
	ReturnTokenStrs      bool
}

// ParseTokenizeRequest parses a /tokenize body. add_special_tokens defaults
// to true for the completion form and false for the chat form, as in vLLM.
func ParseTokenizeRequest(body []byte) (*TokenizeRequest, *Error) {
	f, e := newFields(body)
	if e != nil {
		return nil, e
	}
	r := &TokenizeRequest{}
	r.Model, _ = f.str("model")
	r.ReturnTokenStrs = f.boolean("return_token_strs", false)
	if msgs, ok := f.list("messages"); ok {
		r.IsChat = true
		r.AddSpecialTokens = f.boolean("add_special_tokens", false)
		r.AddGenerationPrompt = f.boolean("add_generation_prompt", true)
		r.ContinueFinalMessage = f.boolean("continue_final_message", false)
		for i, raw := range msgs {
			m, err := parseMessage(raw)
			if err != "" {
				f.fail("messages."+itoa(i), "value_error", err)
				break
			}
			r.Messages = append(r.Messages, m)
		}
	} else if f.err == nil {
		r.AddSpecialTokens = f.boolean("add_special_tokens", true)
		p, ok := f.str("prompt")
		if !ok && f.err == nil {
			f.fail("prompt", "missing", "Field required")
		}
		r.Prompt = p
	}
	if f.err != nil {
		return nil, f.err
	}
	return r, nil
}

// DetokenizeRequest is a parsed POST /detokenize body.
type DetokenizeRequest struct {
	Model  string
	Tokens []uint32
}

// ParseDetokenizeRequest parses a /detokenize body.
func ParseDetokenizeRequest(body []byte) (*DetokenizeRequest, *Error) {
	f, e := newFields(body)
	if e != nil {
		return nil, e
	}
	r := &DetokenizeRequest{}
	r.Model, _ = f.str("model")
	if !f.present("tokens") {
		f.fail("tokens", "missing", "Field required")
	}
	r.Tokens = f.tokenIDs("tokens")
	if f.err != nil {
		return nil, f.err
	}
	return r, nil
}
