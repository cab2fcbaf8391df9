package balancer

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize"
)

// model is one model's routing state: its config, policy and tokenizer.
type model struct {
	cfg    ModelConfig
	policy route.Policy
	tok    *tokenize.Model // nil: no prediction
	// base and lora seed the block hashes (kvblock.NewSeed): for a LoRA
	// adapter the base model's name and the adapter's, as the engine and
	// the sidecar hash them; base "" means cfg.Name, no adapter.
	base, lora string
	// pickMu makes a pick and its lease one step (Balancer.pick).
	pickMu sync.Mutex
}

// models resolves request model names: configured models and aliases are
// fixed; a model only the gossip knows gets a policy on first use.
type models struct {
	cfg     *Config
	byKey   map[string]*model // name or alias → model
	seedMix uint64            // mixed into every policy's seed

	// tokenizes reports whether some configured model has a tokenizer
	// (automatic models never do).
	tokenizes bool

	mu   sync.Mutex // protects auto
	auto map[string]*model
	// onForget is called (under mu) with the name of a forgotten
	// automatic model (nil: nothing to do).
	onForget func(name string)
	// onPolicy is called (under mu) with an automatic model's new policy
	// (nil: nothing to do).
	onPolicy func(name string, p route.Policy)
}

// newModelsReusing builds the models of cfg. A model of old (nil: none)
// whose config is the same but for its aliases keeps its policy (and its
// state: overlay, counters) and tokenizer. seedMix is mixed into every
// policy's seed, so balancers with one config draw apart (anti-herding).
func newModelsReusing(cfg *Config, reg prometheus.Registerer, old *models, seedMix uint64) (*models, error) {
	ms := &models{cfg: cfg, byKey: map[string]*model{}, auto: map[string]*model{}, seedMix: seedMix}
	for i := range cfg.Models {
		mc := cfg.Models[i]
		mc.Routing = cfg.routeConfig(&mc)
		mc.Routing.Seed ^= seedMix
		if prev := old.configured(mc.Name); prev != nil && sameModel(prev.cfg, mc) {
			m := &model{cfg: mc, policy: prev.policy, tok: prev.tok}
			ms.tokenizes = ms.tokenizes || m.tok != nil
			ms.byKey[mc.Name] = m
			for _, a := range mc.Aliases {
				ms.byKey[a] = m
			}
			continue
		}
		pol, err := route.New(mc.Routing)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", mc.Name, err)
		}
		m := &model{cfg: mc, policy: pol}
		if mc.Tokenizer != "" {
			var treg prometheus.Registerer
			if reg != nil {
				treg = swapRegisterer{prometheus.WrapRegistererWith(prometheus.Labels{"served_model": mc.Name}, reg)}
			}
			tok, err := tokenize.Load(mc.Tokenizer, tokenize.Options{ChatTemplate: mc.ChatTemplate, Registerer: treg})
			if err != nil {
				return nil, fmt.Errorf("model %s: load tokenizer: %w", mc.Name, err)
			}
			m.tok = tok
			ms.tokenizes = true
		}
		ms.byKey[mc.Name] = m
		for _, a := range mc.Aliases {
			ms.byKey[a] = m
		}
	}
	return ms, nil
}

// maxAutoModels bounds the automatic models kept: past it, those no replica
// serves any more are forgotten (with their policies, overlays and metric
// series; onForget is told).
const maxAutoModels = 64

// configured returns the configured model named name (not an alias), or
// nil; ms may be nil.
func (ms *models) configured(name string) *model {
	if ms == nil {
		return nil
	}
	if m := ms.byKey[name]; m != nil && m.cfg.Name == name {
		return m
	}
	return nil
}

// sameModel reports whether a and b differ at most in their aliases.
func sameModel(a, b ModelConfig) bool {
	a.Aliases, b.Aliases = nil, nil
	return reflect.DeepEqual(a, b)
}

// lookup returns the model a request names: a configured model or alias,
// or (when some replica of snap serves it) an automatic one. An automatic
// model that is a LoRA adapter of a configured base model takes the base's
// tokenizer, routing and block size, and hashes with the base and the
// adapter, as the engine does.
func (ms *models) lookup(name string, snap *fleet.Snapshot) *model {
	if m := ms.byKey[name]; m != nil {
		return m
	}
	set := snap.Models[name]
	if set == nil || len(set.Replicas) == 0 {
		return nil
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if m := ms.auto[name]; m != nil {
		return m
	}
	if len(ms.auto) >= maxAutoModels {
		for n := range ms.auto {
			if snap.Models[n] == nil {
				delete(ms.auto, n)
				if ms.onForget != nil {
					ms.onForget(n)
				}
			}
		}
	}
	mc := ms.cfg.autoModel(name)
	m := &model{}
	if base, ok := set.Replicas[0].LoRABase(name); ok {
		m.base, m.lora = base, name
		if bm := ms.byKey[base]; bm != nil {
			aliases := mc.Aliases
			mc = bm.cfg
			mc.Name, mc.Aliases = name, aliases
			m.tok = bm.tok
		}
	}
	mc.Routing.Seed ^= ms.seedMix
	pol, err := route.New(mc.Routing)
	if err != nil { // the defaults were validated with the config
		return nil
	}
	m.cfg, m.policy = mc, pol
	ms.auto[name] = m
	if ms.onPolicy != nil {
		ms.onPolicy(name, pol)
	}
	return m
}

// policyOf returns the policy of the configured or automatic model named
// name (not an alias), or nil.
func (ms *models) policyOf(name string) route.Policy {
	if m := ms.configured(name); m != nil {
		return m.policy
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if m := ms.auto[name]; m != nil {
		return m.policy
	}
	return nil
}

// Reasons a request is routed without a prediction, besides the pool's
// rejection reasons (tokenize.Reason*).
const (
	reasonNoTokenizer = "no_tokenizer"
	reasonUnsupported = "unsupported"
	reasonMultiPrompt = "multi_prompt"
	reasonError       = "error"
)

// tokenizeRequest returns the prompt token ids of a decoded chat or
// completions body, or the reason it has none (a nil body is one the
// tokenizer could not decode).
func (m *model) tokenizeRequest(chat bool, body *tokenize.Body) ([]uint32, string) {
	if m.tok == nil {
		return nil, reasonNoTokenizer
	}
	if body == nil {
		return nil, reasonUnsupported
	}
	if chat {
		p, err := m.tok.ChatBody(body)
		if err != nil {
			return nil, errReason(err)
		}
		return p.TokenIDs, ""
	}
	ps, err := m.tok.CompletionBody(body)
	if err != nil {
		return nil, errReason(err)
	}
	if len(ps) != 1 {
		return nil, reasonMultiPrompt
	}
	return ps[0].TokenIDs, ""
}

func errReason(err error) string {
	var re *tokenize.RequestError
	if errors.As(err, &re) {
		return reasonUnsupported
	}
	return reasonError
}

// hashes returns the prompt's block hashes for this model.
func (m *model) hashes(dst []kvblock.Hash, ids []uint32, cacheSalt string) []kvblock.Hash {
	base := m.base
	if base == "" {
		base = m.cfg.Name
	}
	return kvblock.Hashes(dst, kvblock.NewSeed(base, m.lora, cacheSalt), ids, m.cfg.BlockSize)
}

// requestFields are the body fields the balancer reads.
type requestFields struct {
	Model     *string
	CacheSalt *string
	// Stream reports whether the request asks for a streamed response.
	Stream bool
	// MaxTokens is the request's bound on its output tokens
	// (max_completion_tokens, else max_tokens; 0: none or not a positive
	// integer, which the engine judges).
	MaxTokens int
}

// parseFields reads model and cache_salt from a JSON object body. Names
// match exactly (as in vLLM), a repeated name keeps its last value (as
// Python's json does), and other fields are skipped, not copied.
func parseFields(body []byte) (requestFields, error) {
	var f requestFields
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return f, errors.New("body must be a JSON object")
	}
	var raw struct {
		Model     jsontext.Value `json:"model"`
		CacheSalt jsontext.Value `json:"cache_salt"`
		Stream    jsontext.Value `json:"stream"`
		MaxTokens jsontext.Value `json:"max_tokens"`
		MaxCompl  jsontext.Value `json:"max_completion_tokens"`
	}
	if err := json.Unmarshal(body, &raw, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)); err != nil {
		return f, fmt.Errorf("invalid JSON body: %w", err)
	}
	str := func(name string, r jsontext.Value) (*string, error) {
		if len(r) == 0 || r.Kind() == 'n' {
			return nil, nil
		}
		if r.Kind() != '"' {
			return nil, fmt.Errorf("%s must be a string", name)
		}
		var s string
		if err := json.Unmarshal(r, &s, jsontext.AllowInvalidUTF8(true)); err != nil {
			return nil, fmt.Errorf("%s must be a string", name)
		}
		return &s, nil
	}
	var err error
	if f.Model, err = str("model", raw.Model); err != nil {
		return f, err
	}
	if f.CacheSalt, err = str("cache_salt", raw.CacheSalt); err != nil {
		return requestFields{}, err
	}
	f.Stream = string(raw.Stream) == "true"
	compl, complOK := intField(raw.MaxCompl)
	legacy, legacyOK := intField(raw.MaxTokens)
	f.MaxTokens = maxTokens(compl, complOK, legacy, legacyOK)
	return f, nil
}

// intField returns r as an integer, or false when it is not one.
func intField(r jsontext.Value) (int64, bool) {
	if r.Kind() != '0' {
		return 0, false
	}
	v, err := strconv.ParseInt(string(r), 10, 64)
	return v, err == nil
}

// maxTokens returns the output bound a request states: max_completion_tokens
// (the chat API's current name) when it is a positive integer, else
// max_tokens, else 0.
func maxTokens(compl int64, complOK bool, legacy int64, legacyOK bool) int {
	switch {
	case complOK && compl > 0:
		return int(min(compl, math.MaxInt32))
	case legacyOK && legacy > 0:
		return int(min(legacy, math.MaxInt32))
	}
	return 0
}
