package respcache

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// ErrEmbeddingsDown is returned without a call while the endpoint is left
// alone after a failure (embeddings.retry_interval).
var ErrEmbeddingsDown = errors.New("the embeddings endpoint failed recently; not called")

// embedder calls an OpenAI-compatible /v1/embeddings endpoint, each call
// within a hard time bound.
type embedder struct {
	url, model, apiKey string
	timeout, retry     time.Duration
	client             *http.Client
	m                  *metrics
	// downUntil is the Unix nanosecond until which calls are skipped.
	downUntil atomic.Int64
}

func newEmbedder(cfg EmbeddingsConfig, m *metrics) *embedder {
	u := strings.TrimRight(cfg.URL, "/")
	if !strings.HasSuffix(u, "/v1/embeddings") {
		u += "/v1/embeddings"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &embedder{url: u, model: cfg.Model, apiKey: cfg.APIKey, timeout: cfg.Timeout, retry: cfg.RetryInterval,
		client: &http.Client{Transport: tr}, m: m}
}

// maxEmbeddingResponse bounds an embedding response body.
const maxEmbeddingResponse = 8 << 20

// Embed returns text's embedding (not normalized) within the time bound,
// whatever ctx allows.
func (e *embedder) Embed(ctx context.Context, text string) ([]float32, error) {
	return e.embed(ctx, text, e.timeout)
}

func (e *embedder) embed(ctx context.Context, text string, bound time.Duration) ([]float32, error) {
	if until := e.downUntil.Load(); until != 0 && time.Now().UnixNano() < until {
		return nil, ErrEmbeddingsDown
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	v, err := e.call(cctx, text)
	result := "ok"
	switch {
	case err == nil:
	case ctx.Err() != nil: // the client left: not the endpoint's fault
		result = "error"
	default:
		result = "error"
		if cctx.Err() != nil {
			result = "timeout"
			err = fmt.Errorf("embeddings: no answer within %v: %w", bound, err)
		}
		e.downUntil.Store(time.Now().Add(e.retry).UnixNano())
	}
	e.m.embedding.WithLabelValues(result).Observe(time.Since(start).Seconds())
	return v, err
}

func (e *embedder) call(ctx context.Context, text string) ([]float32, error) {
	body, err := json.Marshal(map[string]any{"model": e.model, "input": text, "encoding_format": "float"})
	if err != nil {
		return nil, fmt.Errorf("embeddings: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.apiKey)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbeddingResponse+1))
	if err != nil {
		return nil, fmt.Errorf("embeddings: read response: %w", err)
	}
	if len(b) > maxEmbeddingResponse {
		return nil, fmt.Errorf("embeddings: response larger than %d bytes", maxEmbeddingResponse)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings: %s: %.200s", resp.Status, b)
	}
	return ParseEmbeddingResponse(b)
}

// ParseEmbeddingResponse returns the first embedding of an OpenAI
// embeddings response ({"data":[{"embedding":[...]}]}), as floats or as
// base64 little-endian float32 (encoding_format "base64").
func ParseEmbeddingResponse(b []byte) ([]float32, error) {
	var r struct {
		Data []struct {
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("embeddings: decode response: %w", err)
	}
	if len(r.Data) == 0 {
		return nil, errors.New("embeddings: the response has no data")
	}
	raw := bytes.TrimSpace(r.Data[0].Embedding)
	var v []float32
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("embeddings: decode base64 embedding: %w", err)
		}
		bin, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(bin)%4 != 0 {
			return nil, fmt.Errorf("embeddings: bad base64 embedding (%d bytes)", len(bin))
		}
		v = make([]float32, len(bin)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(bin[4*i:]))
		}
	} else {
		var f []float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("embeddings: decode embedding: %w", err)
		}
		v = make([]float32, len(f))
		for i, x := range f {
			v[i] = float32(x)
		}
	}
	if len(v) == 0 || len(v) > maxDimensions {
		return nil, fmt.Errorf("embeddings: %d dimensions, want 1 to %d", len(v), maxDimensions)
	}
	for i, x := range v {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("embeddings: component %d is %v", i, f)
		}
	}
	return v, nil
}
