package balancer

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/inferrail/inferrail/balancer/decisionlog"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/openai"
)

// Explanation is the body of POST /v1/explain: how a request would be routed
// now, computed on the current view without sending anything upstream and
// without changing any state (no lease, no overlay placement).
type Explanation struct {
	// Route is chat or completions.
	Route string `json:"route"`
	// Model is the alias-resolved model and Policy its routing policy.
	Model  string `json:"model"`
	Policy string `json:"policy"`
	// PromptTokens is the prompt's length in tokens (0 with Unpredicted).
	PromptTokens int `json:"prompt_tokens"`
	// TokenIDs are the prompt's tokens, as the engine will see them.
	TokenIDs []uint32 `json:"token_ids"`
	// BlockSize is the KV block size; Blocks are the chained hashes of the
	// prompt's full blocks (docs/design.md#identity-of-a-prefix), as 16 hex
	// digits (a JSON number would lose bits in most decoders).
	BlockSize int      `json:"block_size"`
	Blocks    []string `json:"blocks"`
	// Unpredicted says why the prompt was not tokenized (no_tokenizer,
	// too_large, ...; "": it was): the request is then routed without a
	// cache prediction.
	Unpredicted string `json:"unpredicted,omitempty"`
	// Pick is the replica the request would go to and Reason why; a
	// request the policy would shed (reason shed, routing.shed_delay) has
	// no pick.
	Pick   string `json:"pick"`
	Reason string `json:"reason"`
	// CachedTokens is the pick's predicted cached prompt tokens.
	CachedTokens int `json:"predicted_cached_tokens"`
	// Score and EstimatedTTFTMS are the pick's, where the policy has them.
	Score           *float64 `json:"score,omitempty"`
	EstimatedTTFTMS *float64 `json:"estimated_ttft_ms,omitempty"`
	// SummaryFallback reports whether a missing or stale summary made the
	// policy assume the prefix_hash owner holds the prefix.
	SummaryFallback bool `json:"summary_fallback,omitempty"`
	// Candidates is every replica serving the model, as a decision log
	// record shows them.
	Candidates []decisionlog.Candidate `json:"candidates"`
}

// serveExplain answers POST /v1/explain with a chat or completions body
// (?route=chat|completions; by default a body with messages is chat): the
// Explanation, or an OpenAI error with the status the request would get.
func (b *Balancer) serveExplain(w http.ResponseWriter, r *http.Request) {
	body, oerr := b.readBody(w, r)
	if oerr != nil {
		oerr.Write(w)
		return
	}
	k, oerr := explainKind(r.URL.Query().Get("route"), body)
	if oerr != nil {
		oerr.Write(w)
		return
	}
	ex, oerr := b.explain(r, k, body)
	if oerr != nil {
		oerr.Write(w)
		return
	}
	writeJSON(w, http.StatusOK, ex)
}

// explainKind returns the route a body is explained as.
func explainKind(route string, body []byte) (kind, *openai.Error) {
	switch route {
	case "chat":
		return kindChat, nil
	case "completions":
		return kindCompletions, nil
	case "":
	default:
		return 0, openai.BadRequest("route", "route must be chat or completions, got %q", route)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return 0, openai.BadRequest("", "the body must be a JSON object: %v", err)
	}
	if _, ok := fields["messages"]; ok {
		return kindChat, nil
	}
	if _, ok := fields["prompt"]; ok {
		return kindCompletions, nil
	}
	return 0, openai.BadRequest("messages", "the body needs messages (chat) or prompt (completions)")
}

// explain tokenizes body and runs its model's policy as a dry run on the
// current snapshot.
func (b *Balancer) explain(r *http.Request, k kind, body []byte) (*Explanation, *openai.Error) {
	snap := b.fleet.Snapshot()
	p, oerr := b.parse(r.Context(), k, body, snap)
	if oerr != nil {
		return nil, oerr
	}
	m := p.model
	ex := &Explanation{Route: k.String(), Model: m.cfg.Name, Policy: m.policy.Name(), BlockSize: m.cfg.BlockSize,
		TokenIDs: []uint32{}, Blocks: []string{}, Unpredicted: p.reason, Candidates: []decisionlog.Candidate{}}
	var hashes []kvblock.Hash
	if p.reason == "" {
		ex.PromptTokens, ex.TokenIDs = len(p.ids), p.ids
		hashes = m.hashes(nil, p.ids, p.salt)
		for _, h := range hashes {
			ex.Blocks = append(ex.Blocks, fmt.Sprintf("%016x", uint64(h)))
		}
	}
	set := snap.Models[m.cfg.Name]
	if set == nil {
		return nil, openai.Unavailable("no healthy replica serves %s", m.cfg.Name)
	}
	now := b.now()
	cands := set.Candidates(now, nil)
	req := route.Request{Model: m.cfg.Name, Hashes: hashes, BlockSize: m.cfg.BlockSize,
		PromptTokens: ex.PromptTokens, OutputTokens: p.maxTokens, Now: now, DryRun: true, Turn: p.turn}
	idx, d, err := m.policy.Pick(&req, cands, route.NewScratch(len(cands)))
	switch {
	case errors.Is(err, route.ErrAllFull):
		return nil, openai.Unavailable("every replica serving %s is at its capacity; retry later", m.cfg.Name)
	case errors.Is(err, route.ErrOverloaded):
		// The request would be refused (routing.shed_delay): no pick, and
		// every candidate's estimates to say why.
		ex.Reason, ex.SummaryFallback = string(d.Reason), d.SummaryFallback
		ex.Candidates = candidateRecords(m.policy, set, cands, nil, d, now)
		return ex, nil
	case err != nil:
		return nil, openai.Unavailable("no healthy replica serves %s", m.cfg.Name)
	}
	ex.Pick, ex.Reason = set.Replicas[idx].ID, string(d.Reason)
	ex.CachedTokens, ex.SummaryFallback = d.CachedTokens, d.SummaryFallback
	ex.Score, ex.EstimatedTTFTMS = pickFigures(d)
	ex.Candidates = candidateRecords(m.policy, set, cands, nil, d, now)
	return ex, nil
}
