package balancer

import (
	"context"

	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/tokenize"
)

// parsed is what forward learns from a request body before it routes.
type parsed struct {
	model *model
	// body is the body to forward: the client's, with model rewritten when
	// the request named an alias or no model.
	body []byte
	// salt is the request's cache_salt ("" when it has none).
	salt string
	// ids are the prompt's token ids when reason is "".
	ids []uint32
	// reason says why there are no ids: a reason* constant or a
	// tokenize.Reason* pool rejection.
	reason string
	// stream reports whether the request asks for a streamed response.
	stream bool
	// maxTokens is the request's bound on its output tokens (0: none).
	maxTokens int
	// turn is where a tokenized chat request stands in its conversation
	// (tokenize.Body.OpensConversation, ContinuesConversation; unknown when
	// not tokenized).
	turn route.Turn
}

// parse decodes body once, resolves its model and tokenizes its prompt.
//
// When some model has a tokenizer, the body is decoded by the tokenizer
// (tokenize.DecodeBody) inside the tokenizing pool, and the balancer reads
// model and cache_salt from that decoded form, so the body is decoded once
// and the decode counts against the pool's CPU bound like the rest of
// tokenization. If the pool turns the request away, the fields are read
// with the light parseFields and the request is routed without a
// prediction. Embeddings and fleets without tokenizers use parseFields only.
func (b *Balancer) parse(ctx context.Context, k kind, body []byte, snap *fleet.Snapshot) (parsed, *openai.Error) {
	if k == kindEmbeddings || !b.cur().models.tokenizes {
		return b.resolve(k, body, snap, nil, false)
	}
	var p parsed
	var oerr *openai.Error
	err := b.pool.Do(ctx, len(body), func() {
		dec, derr := tokenize.DecodeBody(body)
		if derr != nil {
			dec = nil // parseFields decides whether the body is bad
		}
		p, oerr = b.resolve(k, body, snap, dec, true)
	})
	if err == nil {
		return p, oerr
	}
	p, oerr = b.resolve(k, body, snap, nil, false)
	if oerr == nil && p.model.tok != nil {
		if p.reason = tokenize.RejectReason(err); p.reason == "" {
			p.reason = reasonError
		}
	}
	return p, oerr
}

// resolve reads model and cache_salt (from dec when the tokenizer decoded
// the body, else from body), resolves the model, rewrites the model field
// when needed and, with tokenizing set, tokenizes the prompt from dec.
func (b *Balancer) resolve(k kind, body []byte, snap *fleet.Snapshot, dec *tokenize.Body, tokenizing bool) (parsed, *openai.Error) {
	f, err := fieldsOf(dec, body)
	if err != nil {
		return parsed{}, openai.BadRequest("", "%v", err)
	}
	var name string
	if f.Model != nil {
		name = *f.Model
	} else if name = b.soleModel(snap); name == "" {
		return parsed{}, openai.BadRequest("model", "model is required")
	}
	m := b.cur().models.lookup(name, snap)
	if m == nil {
		return parsed{}, openai.ModelNotFound(name)
	}
	if f.Model == nil || name != m.cfg.Name {
		if body, err = openai.RewriteModel(body, m.cfg.Name); err != nil {
			return parsed{}, openai.BadRequest("", "%v", err)
		}
	}
	p := parsed{model: m, body: body, reason: reasonNoTokenizer, stream: f.Stream, maxTokens: f.MaxTokens}
	if f.CacheSalt != nil {
		p.salt = *f.CacheSalt
	}
	if tokenizing && k != kindEmbeddings {
		p.ids, p.reason = m.tokenizeRequest(k == kindChat, dec)
		if p.reason == "" && k == kindChat && dec != nil {
			switch {
			case dec.OpensConversation():
				p.turn = route.TurnFirst
			case dec.ContinuesConversation():
				p.turn = route.TurnLater
			}
		}
	}
	return p, nil
}

// fieldsOf returns the fields the balancer reads, from the tokenizer's
// decoded body when there is one (the same values parseFields reads from
// the bytes), else with parseFields.
func fieldsOf(dec *tokenize.Body, body []byte) (requestFields, error) {
	if dec == nil {
		return parseFields(body)
	}
	var f requestFields
	for _, fd := range []struct {
		name string
		dst  **string
	}{{"model", &f.Model}, {"cache_salt", &f.CacheSalt}} {
		s, ok, err := dec.String(fd.name)
		if err != nil {
			return requestFields{}, err
		}
		if ok {
			*fd.dst = &s
		}
	}
	f.Stream, _ = dec.Bool("stream")
	compl, complOK := dec.Int("max_completion_tokens")
	legacy, legacyOK := dec.Int("max_tokens")
	f.MaxTokens = maxTokens(compl, complOK, legacy, legacyOK)
	return f, nil
}

// soleModel returns the only model there is, or "".
func (b *Balancer) soleModel(snap *fleet.Snapshot) string {
	cfg := b.cur().cfg
	if len(cfg.Models) == 1 {
		return cfg.Models[0].Name
	}
	if len(cfg.Models) == 0 && len(snap.ModelNames) == 1 {
		return snap.ModelNames[0]
	}
	return ""
}
