package enginesim

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/inferrail/inferrail/internal/openai"
)

// handleChat serves POST /v1/chat/completions.
func (s *frontEnd) handleChat(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	req, e := openai.ParseChatCompletionRequest(body)
	if e != nil {
		e.Write(w)
		return
	}
	g, e := s.prepareChat(r, body, req)
	if e != nil {
		e.Write(w)
		return
	}
	st, done, e := s.submit(g)
	if e != nil {
		e.Write(w)
		return
	}
	defer done()
	q := &seqReader{st: st, ts: newTextStream(s.tok, g.params)}
	if req.Stream {
		s.streamChat(w, r, g, q)
		return
	}
	s.completeChat(w, r, g, q)
}

// prepareChat validates a chat request and renders its prompt.
func (s *frontEnd) prepareChat(r *http.Request, body []byte, req *openai.ChatCompletionRequest) (*genRequest, *openai.Error) {
	if e := s.checkModel(req.Model); e != nil {
		return nil, e
	}
	if e := s.checkCommon(&req.Params, req.Raw); e != nil {
		return nil, e
	}
	if req.Logprobs {
		return nil, openai.BadRequest("logprobs", "logprobs are not supported by the simulator")
	}
	if req.TopLogprobs != nil && *req.TopLogprobs != 0 {
		return nil, openai.BadRequest("top_logprobs", "top_logprobs are not supported by the simulator")
	}
	if req.ChatTemplate != "" {
		return nil, openai.BadRequest("chat_template", "Chat template is passed with request, but --trust-request-chat-template is not set. Refused request with untrusted chat template.")
	}
	if req.ContinueFinalMessage && req.AddGenerationPrompt {
		return nil, openai.ValueError("continue_final_message", "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
	}
	if e := checkTools(req); e != nil {
		return nil, e
	}
	if len(req.Messages) == 0 {
		return nil, openai.BadRequest("messages", "messages must not be empty")
	}
	for i, m := range req.Messages {
		if m.NonText {
			return nil, openai.BadRequest("messages", "messages[%d] has non-text content, but the simulated model is text-only", i)
		}
	}
	prompt, err := s.tok.ChatPrompt(body, req.Messages, req.AddGenerationPrompt, req.ContinueFinalMessage, req.AddSpecialTokens)
	if err != nil {
		return nil, openai.BadRequest("messages", "%v", err)
	}
	maxTokens, e := s.resolveMaxTokens(&req.Params, len(prompt))
	if e != nil {
		return nil, e
	}
	base, chosen := requestIDs(r, req.RequestID)
	g := &genRequest{chat: true, params: &req.Params, prompt: prompt, id: "chatcmpl-" + base, baseID: base,
		max: maxTokens, created: time.Now().Unix(), role: "assistant"}
	if chosen {
		g.keyID = base
	}
	if !req.AddGenerationPrompt {
		g.role = req.Messages[len(req.Messages)-1].Role
	}
	return g, nil
}

// checkTools mirrors vLLM without a tool parser: tools are accepted only
// with tool_choice "none".
func checkTools(req *openai.ChatCompletionRequest) *openai.Error {
	choice := strings.TrimSpace(string(req.ToolChoice))
	if len(req.Raw["tools"]) > 0 && strings.TrimSpace(string(req.Raw["tools"])) == "[]" {
		return openai.ValueError("tools", "`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.")
	}
	switch {
	case len(req.Tools) == 0 && (choice == "" || choice == "null" || choice == `"none"`):
		return nil
	case len(req.Tools) == 0:
		return openai.ValueError("tool_choice", "When using `tool_choice`, `tools` must be set.")
	case choice == `"none"`:
		return nil
	case choice == "" || choice == "null" || choice == `"auto"`:
		return openai.BadRequest("tool_choice", `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
	default:
		return openai.BadRequest("tool_choice", "tool_choice=%s requires --tool-call-parser to be set", choice)
	}
}

// completeChat collects the whole sequence and writes one response.
func (s *frontEnd) completeChat(w http.ResponseWriter, r *http.Request, g *genRequest, q *seqReader) {
	var text strings.Builder
	var reason string
	for !q.done {
		step, ok := q.next(r.Context())
		if !ok {
			return // the client went away; the sequence is aborted
		}
		text.WriteString(step.delta)
		reason = step.reason
	}
	content := text.String()
	choice := openai.ChatChoice{
		Index:        0,
		Message:      openai.ChatMessage{Role: g.role, Content: &content, ToolCalls: []any{}},
		FinishReason: strPtr(reason),
		StopReason:   q.stopReason(),
	}
	if g.params.ReturnTokenIDs {
		choice.TokenIDs = q.ts.tokens
	}
	resp := openai.ChatCompletionResponse{
		ID: g.id, Object: openai.ObjectChatCompletion, Created: g.created, Model: s.responseModel(g),
		Choices: []openai.ChatChoice{choice},
		Usage:   s.usage(q.prompt, len(q.ts.tokens), q.cached, true),
	}
	if g.params.ReturnTokenIDs {
		resp.PromptTokenIDs = g.prompt
	}
	writeJSON(w, http.StatusOK, resp)
}

// streamChat writes the sequence as chat.completion.chunk events.
func (s *frontEnd) streamChat(w http.ResponseWriter, r *http.Request, g *genRequest, q *seqReader) {
	includeUsage, continuous := streamUsageFlags(g.params)
	startStream(w)
	sse := openai.NewWriter(w)
	model := s.responseModel(g)
	chunk := func(choices []openai.ChatChunkChoice) *openai.ChatCompletionChunk {
		return &openai.ChatCompletionChunk{ID: g.id, Object: openai.ObjectChatCompletionChunk, Created: g.created, Model: model, Choices: choices}
	}
	send := func(c *openai.ChatCompletionChunk, ok *bool) {
		b, err := json.Marshal(c)
		if err == nil {
			err = sse.WriteData(b)
		}
		if err != nil {
			*ok = false
		}
	}
	var fast *chunkEncoder // the common chunks, without reflection
	if !continuous && !g.params.ReturnTokenIDs {
		fast = newChunkEncoder(g.id, openai.ObjectChatCompletionChunk, g.created, model)
	}
	writeOK := true
	for !q.done && writeOK {
		step, ok := q.next(r.Context())
		if !ok {
			return
		}
		if step.first {
			c := chunk([]openai.ChatChunkChoice{{Index: 0, Delta: openai.ChatDelta{Role: openai.Some(g.role), Content: openai.Some("")}}})
			if g.params.ReturnTokenIDs {
				c.PromptTokenIDs = openai.Some(g.prompt)
			} else {
				c.PromptTokenIDs = openai.Null[[]uint32]()
			}
			if continuous {
				c.Usage = openai.Some(s.usage(q.prompt, 0, 0, false))
			}
			send(c, &writeOK)
		}
		if step.delta == "" && len(step.newTokens) == 0 && len(q.ts.tokens) == 0 {
			continue // no token yet (prefill, or aborted before any): vLLM sends no chunk
		}
		if fast != nil {
			finish := ""
			if step.finished {
				finish = step.reason
			}
			if err := sse.WriteData(fast.chatDelta(step.delta, finish, q.stopReason())); err != nil {
				writeOK = false
			}
			continue
		}
		choice := openai.ChatChunkChoice{Index: 0, Delta: openai.ChatDelta{Content: openai.Some(step.delta)}}
		if g.params.ReturnTokenIDs {
			choice.TokenIDs = openai.Some(step.newTokens)
		} else {
			choice.TokenIDs = openai.Null[[]uint32]()
		}
		if step.finished {
			choice.FinishReason = strPtr(step.reason)
			choice.StopReason = openai.Some(q.stopReason())
		}
		c := chunk([]openai.ChatChunkChoice{choice})
		if continuous {
			c.Usage = openai.Some(s.usage(q.prompt, len(q.ts.tokens), 0, false))
		}
		send(c, &writeOK)
	}
	if !writeOK {
		if !q.done {
			q.st.Abort("abort")
			drainStream(q.st)
		}
		return
	}
	if includeUsage {
		c := chunk([]openai.ChatChunkChoice{})
		c.Usage = openai.Some(s.usage(q.prompt, len(q.ts.tokens), q.cached, false))
		send(c, &writeOK)
	}
	_ = sse.WriteDone()
}

// startStream writes the headers of an SSE response and flushes them, as
// vLLM's StreamingResponse starts the response before the first chunk.
func startStream(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
