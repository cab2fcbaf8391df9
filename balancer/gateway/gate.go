package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/inferrail/inferrail/internal/openai"
)

// Gate is the gateway's immutable per-config state: keys, the keyless
// quota, CORS and the admin token, over a Limiter that outlives it. Safe
// for concurrent use.
type Gate struct {
	keys     *Keyring // nil: keys off
	admin    Token
	def      Quota
	ipHeader string // rate_limits.client_ip_header
	cors     *CORS
	lim      *Limiter
	m        *Metrics
}

// New builds a gate from a validated config: it reads auth.keys_file and
// hashes every key. lim and m are shared across reloads; m may be nil.
func New(cfg Config, resolve Resolver, lim *Limiter, m *Metrics) (*Gate, error) {
	if m == nil {
		m = NewMetrics(nil)
	}
	g := &Gate{def: QuotaOf(cfg.RateLimits.Default), cors: NewCORS(cfg.CORS), lim: lim, m: m,
		ipHeader: cfg.RateLimits.ClientIPHeader}
	var err error
	if g.admin, err = NewToken(cfg.Auth.AdminToken, cfg.Auth.AdminTokenSHA256); err != nil {
		return nil, fmt.Errorf("auth.admin_token_sha256 %w", err)
	}
	keys := cfg.Auth.Keys
	if cfg.Auth.KeysFile != "" {
		more, err := LoadKeysFile(cfg.Auth.KeysFile)
		if err != nil {
			return nil, err
		}
		keys = append(append([]KeyConfig(nil), keys...), more...)
	}
	if len(keys) > 0 || cfg.Auth.KeysFile != "" {
		if g.keys, err = NewKeyring(keys, cfg.RateLimits.Default, resolve); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// KeysOn reports whether requests need an API key.
func (g *Gate) KeysOn() bool { return g.keys != nil }

// Keys returns the number of API keys (0 when keys are off).
func (g *Gate) Keys() int {
	if g.keys == nil {
		return 0
	}
	return g.keys.Len()
}

// CORS returns the CORS policy.
func (g *Gate) CORS() *CORS { return g.cors }

// Identity is who a request is, for model permissions and rate limits.
type Identity struct {
	// Key is the request's API key (nil when keys are off).
	Key *Key
	// Label is the key's name, or KeylessLabel.
	Label string
	// bucket names the client's buckets: the key or the client IP.
	bucket string
	quota  Quota
}

// Authenticate returns the identity of r: its key when keys are on (401 in
// the OpenAI shape when it has none or a wrong one), else its client IP.
func (g *Gate) Authenticate(r *http.Request) (Identity, *openai.Error) {
	if g.keys == nil {
		if !g.def.On() {
			return Identity{Label: KeylessLabel}, nil
		}
		return Identity{Label: KeylessLabel, bucket: "ip:" + g.clientIP(r), quota: g.def}, nil
	}
	secret, ok := Credential(r.Header)
	if !ok {
		g.m.requests.WithLabelValues("", DecisionUnauthorized).Inc()
		return Identity{}, unauthorized("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or in an x-api-key header.")
	}
	k := g.keys.Lookup(secret)
	if k == nil {
		g.m.requests.WithLabelValues("", DecisionUnauthorized).Inc()
		return Identity{}, unauthorized("Incorrect API key provided.")
	}
	return Identity{Key: k, Label: k.Name, bucket: "key:" + k.Name, quota: QuotaOf(k.Limits)}, nil
}

// clientIP returns the address that identifies a keyless client: the last
// address of the client IP header when it is configured and present, else
// the TCP peer's.
func (g *Gate) clientIP(r *http.Request) string {
	if g.ipHeader != "" {
		if v := r.Header.Values(g.ipHeader); len(v) > 0 {
			last := v[len(v)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if last = strings.TrimSpace(last); last != "" {
				return last
			}
		}
	}
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return ip
}

func unauthorized(msg string) *openai.Error {
	return &openai.Error{Status: http.StatusUnauthorized, Type: openai.TypeAuthentication, Message: msg}
}

// AllowsModel reports whether id may use model (a canonical name).
func (id Identity) AllowsModel(model string) bool { return id.Key == nil || id.Key.Allows(model) }

// Admission is an admitted request's hold on its client's buckets.
type Admission struct {
	g      *Gate
	id     Identity
	levels Levels
	// limited reports whether some bucket is on (headers are written).
	limited bool
}

// Admit checks that id may use model and takes one request and
// promptTokens from its buckets. On success the returned Admission writes
// the rate-limit headers and charges the completion tokens; on failure the
// error is the answer (403, 429 with Retry-After, or 503 when the shared
// store is down and the limiter fails closed) and h holds the rate-limit
// headers.
func (g *Gate) Admit(ctx context.Context, h http.Header, id Identity, model string, promptTokens int) (*Admission, *openai.Error) {
	if !id.AllowsModel(model) {
		g.m.requests.WithLabelValues(id.Label, DecisionForbidden).Inc()
		return nil, &openai.Error{Status: http.StatusForbidden, Type: openai.TypePermissionDenied, Param: "model",
			Message: fmt.Sprintf("The API key %s may not use the model `%s`.", id.Label, model)}
	}
	a := &Admission{g: g, id: id, limited: id.quota.On()}
	if !a.limited {
		g.m.requests.WithLabelValues(id.Label, DecisionAllowed).Inc()
		return a, nil
	}
	q := id.quota
	tok := float64(promptTokens)
	if q.Tokens.On() && tok > q.Tokens.Burst {
		g.m.requests.WithLabelValues(id.Label, DecisionTokens).Inc()
		return nil, rateLimited(fmt.Sprintf("Request too large for %s on tokens: limit %d, requested %d. Send fewer prompt tokens.",
			id.Label, int64(q.Tokens.Burst), promptTokens))
	}
	res, err := g.lim.Take(ctx, id.bucket, q, Op{Requests: 1, Tokens: tok})
	if err != nil {
		if errors.Is(err, ErrStoreDown) {
			g.m.requests.WithLabelValues(id.Label, DecisionStoreDown).Inc()
			h.Set("Retry-After", "1")
			return nil, openai.Unavailable("the rate limit store is unreachable; retry later")
		}
		return nil, openai.StatusError(499, "client closed the request")
	}
	setLimitHeaders(h, q, res.Levels)
	if !res.Allowed {
		rs, ts := q.Requests.status(res.Levels.Requests, 1), q.Tokens.status(res.Levels.Tokens, tok)
		what, s, dec := "requests", rs, DecisionRequests
		if !q.Requests.On() || (q.Tokens.On() && ts.Wait > rs.Wait) {
			what, s, dec = "tokens", ts, DecisionTokens
		}
		g.m.requests.WithLabelValues(id.Label, dec).Inc()
		h.Set("Retry-After", openai.RetryAfter(s.Wait))
		req := 1
		if what == "tokens" {
			req = promptTokens
		}
		return nil, rateLimited(fmt.Sprintf("Rate limit reached for %s on %s: limit %d, remaining %d, requested %d. Please try again in %s.",
			id.Label, what, s.Limit, s.Remaining, req, FormatReset(s.Wait)))
	}
	g.m.requests.WithLabelValues(id.Label, DecisionAllowed).Inc()
	if promptTokens > 0 {
		g.m.tokens.WithLabelValues(id.Label, "prompt").Add(tok)
	}
	a.levels = res.Levels
	return a, nil
}

func rateLimited(msg string) *openai.Error {
	return &openai.Error{Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit, Message: msg}
}

// SetHeaders writes the admission's rate-limit headers into h.
func (a *Admission) SetHeaders(h http.Header) {
	if a.limited {
		setLimitHeaders(h, a.id.quota, a.levels)
	}
}

// Charge takes n completion tokens from the client's token bucket, whatever
// its level (it may go into debt, so the next request waits). With a shared
// store the charge runs in the background (bounded by the store's timeout),
// so the round trip does not delay the end of the client's response.
func (a *Admission) Charge(ctx context.Context, n int64) {
	if n <= 0 {
		return
	}
	a.g.m.tokens.WithLabelValues(a.id.Label, "completion").Add(float64(n))
	if !a.id.quota.Tokens.On() {
		return
	}
	op := Op{Tokens: float64(n), Force: true}
	ctx = context.WithoutCancel(ctx)
	if a.g.lim.Shared() {
		go func() { _, _ = a.g.lim.Take(ctx, a.id.bucket, a.id.quota, op) }()
		return
	}
	_, _ = a.g.lim.Take(ctx, a.id.bucket, a.id.quota, op)
}

// AdminAllowed reports whether r may call a mutating admin endpoint: always
// when keys are off; with keys on, only with the admin token (none
// configured: never).
func (g *Gate) AdminAllowed(r *http.Request) bool {
	if g.keys == nil {
		return true
	}
	secret, ok := Credential(r.Header)
	return ok && g.admin.Matches(secret)
}
