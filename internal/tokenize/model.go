package tokenize

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ardanlabs/jinja"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

// SimSpec is the Load spec of the builtin:sim tokenizer.
const SimSpec = "builtin:sim"

// Encoder turns text into token ids and back: the Hugging Face tokenizer of
// a model directory, or builtin:sim. Implementations must be safe for
// concurrent use.
type Encoder interface {
	// Encode tokenizes text; with addSpecialTokens the tokenizer's
	// post-processor adds its special tokens (BOS, ...).
	Encode(text string, addSpecialTokens bool) ([]uint32, error)
	// Decode returns the text of ids, leaving out special tokens when
	// skipSpecialTokens is set.
	Decode(ids []uint32, skipSpecialTokens bool) (string, error)
}

// Options configures Load. The zero value is usable.
type Options struct {
	// ChatTemplate overrides the model's chat template, as vLLM's
	// --chat-template does: a file path, or the template text itself when
	// it contains '{', '}' or a newline.
	ChatTemplate string
	// TrustRequestChatTemplate lets a request carry its own chat_template
	// (vLLM's --trust-request-chat-template). Otherwise such a request is
	// an error.
	TrustRequestChatTemplate bool
	// CacheBytes bounds the tokenizer's byte-bounded LRU cache of segment
	// ids: the text between special tokens, such as a shared system
	// prompt, a tool list or a document, is tokenized once. 0 means the
	// tokenizer's default (hf.DefaultSegmentCacheBytes); a negative value
	// turns the cache off.
	CacheBytes int64
	// Registerer receives the cache metrics (labelled with the model
	// spec); nil registers nothing.
	Registerer prometheus.Registerer
	// Encoder, when set, is used instead of loading tokenizer.json from the
	// model directory (tests and other tokenizer implementations).
	Encoder Encoder
}

// Prompt is a rendered prompt and its token ids.
type Prompt struct {
	Text     string   `json:"prompt"`
	TokenIDs []uint32 `json:"token_ids"`
}

// Model tokenizes requests for one model exactly as the engine serving it
// does. A Model is safe for concurrent use.
type Model struct {
	spec      string
	opts      Options
	enc       Encoder
	sim       bool
	templates *templateSet
	specials  map[string]jinja.Value

	reqMu        sync.Mutex // protects reqTemplates
	reqTemplates map[string]*chatTemplate
}

// Load loads the tokenizer and chat template of spec: "builtin:sim" or a
// model directory holding tokenizer.json, tokenizer_config.json and
// optionally chat_template.jinja or chat_template.json.
func Load(spec string, opts Options) (*Model, error) {
	if spec == SimSpec {
		m := &Model{spec: spec, opts: opts, enc: simEncoder{}, sim: true, specials: map[string]jinja.Value{}}
		if opts.ChatTemplate != "" {
			src, err := readTemplateArg(opts.ChatTemplate)
			if err != nil {
				return nil, fmt.Errorf("load model %q: %w", spec, err)
			}
			t, err := compileTemplate(src)
			if err != nil {
				return nil, fmt.Errorf("load model %q: %w", spec, err)
			}
			m.templates = &templateSet{single: t}
			m.sim = false
		}
		m.specials["bos_token"] = jinja.NewString("<|begin_of_text|>")
		m.specials["eos_token"] = jinja.NewString("<|end|>")
		return m, nil
	}
	st, err := os.Stat(spec)
	if err != nil {
		return nil, fmt.Errorf("load model %q: %w", spec, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("load model %q: not a directory (want a model directory or %q)", spec, SimSpec)
	}
	cfg, err := readTokenizerConfig(filepath.Join(spec, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load model %q: %w", spec, err)
	}
	m := &Model{spec: spec, opts: opts, specials: map[string]jinja.Value{}}
	if cfg != nil {
		for k, v := range cfg.Specials {
			m.specials[k] = jinja.NewString(v)
		}
		if len(cfg.AdditionalTokens) > 0 {
			items := make([]jinja.Value, len(cfg.AdditionalTokens))
			for i, t := range cfg.AdditionalTokens {
				items[i] = jinja.NewString(t)
			}
			m.specials["additional_special_tokens"] = jinja.NewList(items)
		}
	}
	if m.templates, err = loadTemplates(spec, opts.ChatTemplate, cfg); err != nil {
		return nil, fmt.Errorf("load model %q: %w", spec, err)
	}
	m.enc = opts.Encoder
	if m.enc == nil {
		if m.enc, err = loadHF(spec, opts.CacheBytes); err != nil {
			return nil, fmt.Errorf("load model %q: %w", spec, err)
		}
	}
	if err := registerCacheMetrics(opts.Registerer, spec, m.enc); err != nil {
		return nil, fmt.Errorf("load model %q: register metrics: %w", spec, err)
	}
	return m, nil
}

// Spec returns the spec the model was loaded from.
func (m *Model) Spec() string { return m.spec }

// HasChatTemplate reports whether Chat can render requests.
func (m *Model) HasChatTemplate() bool { return m.sim || m.templates != nil }

// Chat renders an OpenAI chat completion request body into the prompt the
// engine would build, and tokenizes it without special tokens unless the
// request sets add_special_tokens. A request the engine would reject
// returns a *RequestError.
//
// A caller that also needs fields of the body decodes it once with
// DecodeBody and calls ChatBody instead.
func (m *Model) Chat(body []byte) (Prompt, error) {
	b, err := DecodeBody(body)
	if err != nil {
		return Prompt{}, err
	}
	return m.ChatBody(b)
}

// encodeChat renders a prepared chat request and tokenizes it.
func (m *Model) encodeChat(req *chatRequest) (Prompt, error) {
	text, err := req.render()
	if err != nil {
		return Prompt{}, err
	}
	ids, err := m.enc.Encode(text, req.addSpecialTokens)
	if err != nil {
		return Prompt{}, fmt.Errorf("encode chat prompt: %w", err)
	}
	return Prompt{Text: text, TokenIDs: ids}, nil
}

// RenderChat renders a chat request without tokenizing it.
func (m *Model) RenderChat(body []byte) (string, error) {
	b, err := DecodeBody(body)
	if err != nil {
		return "", err
	}
	if m.sim {
		p, err := m.simChat(b.root)
		return p.Text, err
	}
	req, err := m.prepareChat(b.root)
	if err != nil {
		return "", err
	}
	return req.render()
}

// Raw tokenizes text without adding special tokens (special-token text
// inside it still maps to its special id, as in the engine).
func (m *Model) Raw(text string) ([]uint32, error) {
	return m.enc.Encode(text, false)
}

// Encode tokenizes text, adding the tokenizer's special tokens when
// addSpecialTokens is set (as a completions prompt does).
func (m *Model) Encode(text string, addSpecialTokens bool) ([]uint32, error) {
	return m.enc.Encode(text, addSpecialTokens)
}

// Decode returns the text of ids.
func (m *Model) Decode(ids []uint32, skipSpecial bool) (string, error) {
	return m.enc.Decode(ids, skipSpecial)
}

// simEncoder adapts the builtin:sim tokenizer to Encoder.
type simEncoder struct{}

func (simEncoder) Encode(text string, add bool) ([]uint32, error) {
	return simtok.Encode(text, add), nil
}
func (simEncoder) Decode(ids []uint32, skip bool) (string, error) { return simtok.Decode(ids, skip) }
