package enginesim

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/inferrail/inferrail/internal/openai"
)

// handleCompletions serves POST /v1/completions.
func (s *frontEnd) handleCompletions(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	req, e := openai.ParseCompletionRequest(body)
	if e != nil {
		e.Write(w)
		return
	}
	g, e := s.prepareCompletion(r, req)
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
		s.streamCompletion(w, r, g, q)
		return
	}
	s.completeCompletion(w, r, g, q)
}

// prepareCompletion validates a completion request and tokenizes its prompt.
func (s *frontEnd) prepareCompletion(r *http.Request, req *openai.CompletionRequest) (*genRequest, *openai.Error) {
	if e := s.checkModel(req.Model); e != nil {
		return nil, e
	}
	if e := s.checkCommon(&req.Params, req.Raw); e != nil {
		return nil, e
	}
	if req.Logprobs != nil {
		return nil, openai.BadRequest("logprobs", "logprobs are not supported by the simulator")
	}
	if req.Suffix != "" {
		return nil, openai.BadRequest("suffix", "suffix is not currently supported")
	}
	if req.NumPrompts() != 1 {
		return nil, openai.BadRequest("prompt", "the simulator takes one prompt per request, got %d", req.NumPrompts())
	}
	var prompt []uint32
	switch req.PromptKind {
	case openai.PromptText, openai.PromptTexts:
		var err error
		if prompt, err = s.tok.Encode(req.Prompts[0], req.AddSpecialTokens); err != nil {
			return nil, openai.BadRequest("prompt", "%v", err)
		}
	default:
		prompt = req.TokenPrompts[0]
		if e := s.checkPromptIDs(prompt); e != nil {
			return nil, e
		}
	}
	if len(prompt) == 0 {
		return nil, openai.BadRequest("prompt", "The prompt cannot be empty.")
	}
	maxTokens, e := s.resolveMaxTokens(&req.Params, len(prompt))
	if e != nil {
		return nil, e
	}
	base, chosen := requestIDs(r, req.RequestID)
	g := &genRequest{params: &req.Params, prompt: prompt, id: "cmpl-" + base, baseID: base,
		max: maxTokens, created: time.Now().Unix()}
	if chosen {
		g.keyID = base
	}
	return g, nil
}

// completeCompletion collects the sequence and writes one response.
func (s *frontEnd) completeCompletion(w http.ResponseWriter, r *http.Request, g *genRequest, q *seqReader) {
	var text strings.Builder
	var reason string
	for !q.done {
		step, ok := q.next(r.Context())
		if !ok {
			return
		}
		text.WriteString(step.delta)
		reason = step.reason
	}
	choice := openai.CompletionChoice{Index: 0, Text: text.String(), FinishReason: strPtr(reason), StopReason: q.stopReason()}
	if g.params.ReturnTokenIDs {
		choice.TokenIDs, choice.PromptTokenIDs = q.ts.tokens, g.prompt
	}
	writeJSON(w, http.StatusOK, openai.CompletionResponse{
		ID: g.id, Object: openai.ObjectTextCompletion, Created: g.created, Model: s.responseModel(g),
		Choices: []openai.CompletionChoice{choice},
		Usage:   s.usage(q.prompt, len(q.ts.tokens), q.cached, true),
	})
}

// streamCompletion writes the sequence as text_completion chunks (vLLM
// writes every field of these chunks, nulls included).
func (s *frontEnd) streamCompletion(w http.ResponseWriter, r *http.Request, g *genRequest, q *seqReader) {
	includeUsage, continuous := streamUsageFlags(g.params)
	startStream(w)
	sse := openai.NewWriter(w)
	model := s.responseModel(g)
	var fast *chunkEncoder // the common chunks, without reflection
	if !continuous && !g.params.ReturnTokenIDs {
		fast = newChunkEncoder(g.id, openai.ObjectTextCompletion, g.created, model)
	}
	writeOK := true
	send := func(c *openai.CompletionChunk) {
		b, err := json.Marshal(c)
		if err == nil {
			err = sse.WriteData(b)
		}
		if err != nil {
			writeOK = false
		}
	}
	for !q.done && writeOK {
		step, ok := q.next(r.Context())
		if !ok {
			return
		}
		if step.delta == "" && len(step.newTokens) == 0 && len(q.ts.tokens) == 0 {
			continue
		}
		if fast != nil {
			finish := ""
			if step.finished {
				finish = step.reason
			}
			if err := sse.WriteData(fast.completionDelta(step.delta, finish, q.stopReason())); err != nil {
				writeOK = false
			}
			continue
		}
		choice := openai.CompletionChunkChoice{Index: 0, Text: step.delta}
		if g.params.ReturnTokenIDs {
			choice.TokenIDs = step.newTokens
			if step.first {
				choice.PromptTokenIDs = g.prompt
			}
		}
		if step.finished {
			choice.FinishReason = strPtr(step.reason)
			choice.StopReason = q.stopReason()
		}
		c := &openai.CompletionChunk{ID: g.id, Object: openai.ObjectTextCompletion, Created: g.created, Model: model,
			Choices: []openai.CompletionChunkChoice{choice}, Usage: openai.Null[openai.Usage]()}
		if continuous {
			c.Usage = openai.Some(s.usage(q.prompt, len(q.ts.tokens), 0, false))
		}
		send(c)
	}
	if !writeOK {
		if !q.done {
			q.st.Abort("abort")
			drainStream(q.st)
		}
		return
	}
	if includeUsage {
		send(&openai.CompletionChunk{ID: g.id, Object: openai.ObjectTextCompletion, Created: g.created, Model: model,
			Choices: []openai.CompletionChunkChoice{}, Usage: openai.Some(s.usage(q.prompt, len(q.ts.tokens), q.cached, false))})
	}
	_ = sse.WriteDone()
}
