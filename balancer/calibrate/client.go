package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/inferrail/inferrail/internal/openai"
)

// engineClient talks to one OpenAI-compatible engine.
type engineClient struct {
	base   string // scheme://host[:port][/prefix], no trailing slash
	apiKey string
	http   *http.Client
	// extras sends ignore_eos and return_token_ids (vLLM and SGLang
	// extensions); cleared when the engine rejects them.
	extras bool
}

// StatusError is a non-200 answer from the engine.
type StatusError struct {
	// Path is the request path; Status the HTTP status.
	Path    string
	Status  int
	Message string
}

// Error returns the status and the engine's message.
func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: status %d: %s", e.Path, e.Status, e.Message)
}

func newEngineClient(engine, apiKey string) (*engineClient, error) {
	u, err := url.Parse(engine)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("engine URL must be http(s)://host[:port][/prefix], got %q", engine)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("engine URL must not have a query or fragment, got %q", engine)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 0 // a long prefill may hold the headers back
	tr.MaxIdleConnsPerHost = 64
	return &engineClient{base: strings.TrimSuffix(u.String(), "/"), apiKey: apiKey, http: &http.Client{Transport: tr}, extras: true}, nil
}

func (c *engineClient) close() { c.http.CloseIdleConnections() }

func (c *engineClient) newRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return req, nil
}

// do sends a request and returns the response when its status is 200.
func (c *engineClient) do(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err // a *url.Error: method, URL and cause
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, &StatusError{Path: req.URL.Path, Status: resp.StatusCode, Message: errorMessage(resp.Body)}
	}
	return resp, nil
}

// errorMessage returns the message of an OpenAI (or vLLM legacy) error
// body, or the start of the body.
func errorMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	var e openai.ErrorResponse
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	var l openai.LegacyErrorResponse
	if json.Unmarshal(b, &l) == nil && l.Message != "" {
		return l.Message
	}
	return truncate(strings.TrimSpace(string(b)), 300)
}

// modelCard is what calibration needs of a /v1/models entry.
type modelCard struct {
	ID          string
	MaxModelLen int // 0: not reported
}

// models returns GET /v1/models.
func (c *engineClient) models(ctx context.Context) ([]modelCard, error) {
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen *int   `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("/v1/models: decode: %w", err)
	}
	out := make([]modelCard, 0, len(list.Data))
	for _, m := range list.Data {
		mc := modelCard{ID: m.ID}
		if m.MaxModelLen != nil {
			mc.MaxModelLen = *m.MaxModelLen
		}
		out = append(out, mc)
	}
	return out, nil
}

// tokenize returns the number of tokens of a completions prompt by POST
// /tokenize (vLLM and the simulator); ok is false when the engine has no
// such route.
func (c *engineClient) tokenize(ctx context.Context, model, prompt string) (n int, ok bool, err error) {
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt})
	req, err := c.newRequest(ctx, http.MethodPost, "/tokenize", body)
	if err != nil {
		return 0, false, err
	}
	resp, err := c.do(req)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed) {
			return 0, false, nil
		}
		return 0, false, err
	}
	defer resp.Body.Close()
	var tr openai.TokenizeResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&tr); err != nil {
		return 0, false, fmt.Errorf("/tokenize: decode: %w", err)
	}
	return tr.Count, true, nil
}

// sample is one measured streaming request.
type sample struct {
	Sent   time.Time
	Events []tokenEvent
	// PromptTokens, CompletionTokens and CachedTokens come from usage.
	PromptTokens, CompletionTokens int
	CachedTokens                   int
	CachedReported                 bool
}

// TTFT is the time from sending to the first token-bearing event.
func (s sample) TTFT() time.Duration { return s.Events[0].At.Sub(s.Sent) }

// complete sends one streaming completions request and reads it to the end.
func (c *engineClient) complete(ctx context.Context, model, prompt string, maxTokens int) (sample, error) {
	b := map[string]any{
		"model": model, "prompt": prompt, "max_tokens": maxTokens, "temperature": 0,
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	}
	if c.extras {
		b["ignore_eos"] = true
		b["return_token_ids"] = true
	}
	body, _ := json.Marshal(b)
	req, err := c.newRequest(ctx, http.MethodPost, "/v1/completions", body)
	if err != nil {
		return sample{}, err
	}
	req.Header.Set("Accept", "text/event-stream")
	s := sample{Sent: time.Now()}
	resp, err := c.do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	res, err := readStream(resp.Body, time.Now)
	if err != nil {
		return s, fmt.Errorf("/v1/completions: %w", err)
	}
	if len(res.Events) == 0 {
		return s, errors.New("/v1/completions: the stream carried no token")
	}
	if !res.HasUsage {
		return s, errors.New("/v1/completions: the stream carried no usage (stream_options.include_usage is needed)")
	}
	s.Events = res.Events
	s.PromptTokens, s.CompletionTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	s.CachedTokens, s.CachedReported = res.Usage.CachedTokens()
	return s, nil
}
