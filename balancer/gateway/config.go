package gateway

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inferrail/inferrail/internal/redisconf"
)

// Config is the gateway part of the balancer config: the auth, rate_limits
// and cors sections.
type Config struct {
	Auth       AuthConfig      `yaml:"auth"`
	RateLimits RateLimitConfig `yaml:"rate_limits"`
	CORS       CORSConfig      `yaml:"cors"`
}

// AuthConfig configures API keys. Keys are on when Keys is not empty or
// KeysFile is set; otherwise the client port is open (the default).
type AuthConfig struct {
	// Keys lists API keys in the config file.
	Keys []KeyConfig `yaml:"keys"`
	// KeysFile is a YAML file with a keys: list of the same shape (so a
	// Kubernetes Secret can hold them); its keys add to Keys.
	KeysFile string `yaml:"keys_file"`
	// AdminToken or AdminTokenSHA256 (hex) is the bearer token the admin
	// port's mutating endpoints need once keys are on.
	AdminToken       string `yaml:"admin_token"`
	AdminTokenSHA256 string `yaml:"admin_token_sha256"`
}

// KeyConfig is one API key. Exactly one of Key (the key itself) and SHA256
// (the hex SHA-256 of the key) is set; only the hash is kept in memory.
type KeyConfig struct {
	// Name names the key in metrics and logs; never the key itself.
	Name   string `yaml:"name"`
	Key    string `yaml:"key"`
	SHA256 string `yaml:"sha256"`
	// Models lists the models (or aliases) the key may use; empty or "*":
	// every model. A listed model or alias allows the model under every
	// name.
	Models []string `yaml:"models"`
	// Limits overrides rate_limits.default for this key.
	Limits *Limits `yaml:"limits"`
	// CacheGroup names the response-cache scope the key shares with the
	// other keys of the group ("": the key's own scope).
	CacheGroup string `yaml:"cache_group"`
}

// Limits are one client's rate limits. Zero turns a limit off.
type Limits struct {
	// RequestsPerSecond refills the request bucket; Burst is its size
	// (0: max(1, ceil(requests_per_second))).
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	Burst             int     `yaml:"burst"`
	// TokensPerMinute refills the token bucket (prompt tokens before
	// forwarding, completion tokens after the response); TokenBurst is its
	// size (0: tokens_per_minute).
	TokensPerMinute int64 `yaml:"tokens_per_minute"`
	TokenBurst      int64 `yaml:"token_burst"`
}

// RateLimitConfig configures the rate limits.
type RateLimitConfig struct {
	// Default applies to every key without limits of its own and, when keys
	// are off, to each client IP.
	Default Limits `yaml:"default"`
	// ClientIPHeader names a header that carries the client's address when
	// the balancer sits behind a proxy or load balancer (X-Forwarded-For,
	// X-Real-IP): its last comma-separated address, the one the nearest
	// proxy wrote, identifies a keyless client. "": the TCP peer address.
	// Set it only when every request comes through such a proxy, or a
	// client can pick its own bucket.
	ClientIPHeader string `yaml:"client_ip_header"`
	// Redis shares the buckets between balancers; Addr "" keeps them in
	// memory.
	Redis RedisConfig `yaml:"redis"`
}

// RedisConfig is the shared store: the connection (addr, credentials, db,
// key_prefix for the bucket keys, timeout) and what to do without it.
type RedisConfig struct {
	redisconf.Conn `yaml:",inline"`
	// FailClosed rejects requests with 503 while Redis is unreachable;
	// otherwise (the default) each balancer enforces the limits alone, in
	// memory.
	FailClosed bool `yaml:"fail_closed"`
	// RetryInterval is how long after a failure Redis is left alone before
	// the next request tries it again.
	RetryInterval time.Duration `yaml:"retry_interval"`
}

// CORSConfig configures cross-origin requests from browsers.
type CORSConfig struct {
	// AllowedOrigins lists origins (scheme://host[:port]) or "*"; empty
	// turns CORS off.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// AllowedHeaders lists request headers a preflight may ask for; "*"
	// allows whatever it asks.
	AllowedHeaders []string `yaml:"allowed_headers"`
	// MaxAge is how long a browser may cache a preflight answer.
	MaxAge time.Duration `yaml:"max_age"`
}

// DefaultConfig returns the defaults: keys and limits off, limits in memory,
// CORS off.
func DefaultConfig() Config {
	return Config{
		RateLimits: RateLimitConfig{Redis: RedisConfig{
			Conn:          redisconf.Conn{KeyPrefix: "inferrail:rl:", Timeout: 100 * time.Millisecond},
			RetryInterval: time.Second,
		}},
		CORS: CORSConfig{AllowedHeaders: []string{"*"}, MaxAge: 10 * time.Minute},
	}
}

// Validate reports every problem at once with its YAML path and value. It
// does not read KeysFile (Load does).
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	errs = append(errs, validateKeys("auth.keys", c.Auth.Keys)...)
	a := c.Auth
	if a.AdminToken != "" && a.AdminTokenSHA256 != "" {
		bad("auth.admin_token and auth.admin_token_sha256 are both set; set one")
	}
	if a.AdminTokenSHA256 != "" {
		if _, err := parseDigest(a.AdminTokenSHA256); err != nil {
			bad("auth.admin_token_sha256 %v", err)
		}
	}
	errs = append(errs, c.RateLimits.Default.validate("rate_limits.default")...)
	if h := c.RateLimits.ClientIPHeader; h != "" && !validHeaderName(h) {
		bad("rate_limits.client_ip_header must be a header name, got %q", h)
	}
	r := c.RateLimits.Redis
	errs = append(errs, r.Conn.Validate("rate_limits.redis")...)
	if r.RetryInterval <= 0 {
		bad("rate_limits.redis.retry_interval must be > 0, got %v", r.RetryInterval)
	}
	for i, o := range c.CORS.AllowedOrigins {
		if o != "*" && !validOrigin(o) {
			bad("cors.allowed_origins[%d] must be \"*\" or scheme://host[:port], got %q", i, o)
		}
	}
	for i, h := range c.CORS.AllowedHeaders {
		if h == "" {
			bad("cors.allowed_headers[%d] must not be empty", i)
		}
	}
	if c.CORS.MaxAge < 0 {
		bad("cors.max_age must be >= 0, got %v", c.CORS.MaxAge)
	}
	return errors.Join(errs...)
}

// validateKeys checks a keys list; path names it (auth.keys or the keys
// file's keys).
func validateKeys(path string, keys []KeyConfig) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	names := map[string]bool{}
	for i, k := range keys {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case k.Name == "":
			bad("%s.name must not be empty", p)
		case names[k.Name]:
			bad("%s.name %q is not unique", p, k.Name)
		}
		names[k.Name] = true
		switch {
		case k.Key == "" && k.SHA256 == "":
			bad("%s needs key or sha256", p)
		case k.Key != "" && k.SHA256 != "":
			bad("%s.key and %s.sha256 are both set; set one", p, p)
		case k.SHA256 != "":
			if _, err := parseDigest(k.SHA256); err != nil {
				bad("%s.sha256 %v", p, err)
			}
		}
		for j, m := range k.Models {
			if m == "" {
				bad("%s.models[%d] must not be empty", p, j)
			}
		}
		if k.Limits != nil {
			errs = append(errs, k.Limits.validate(p+".limits")...)
		}
	}
	return errs
}

func (l Limits) validate(path string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !(l.RequestsPerSecond >= 0) || l.RequestsPerSecond > 1e9 {
		bad("%s.requests_per_second must be in [0, 1e9], got %v", path, l.RequestsPerSecond)
	}
	if l.Burst < 0 {
		bad("%s.burst must be >= 0, got %d", path, l.Burst)
	}
	if l.Burst > 0 && l.RequestsPerSecond == 0 {
		bad("%s.burst needs requests_per_second > 0, got burst %d", path, l.Burst)
	}
	if l.TokensPerMinute < 0 || l.TokensPerMinute > 1e15 {
		bad("%s.tokens_per_minute must be in [0, 1e15], got %d", path, l.TokensPerMinute)
	}
	if l.TokenBurst < 0 || l.TokenBurst > 1e15 {
		bad("%s.token_burst must be in [0, 1e15], got %d", path, l.TokenBurst)
	}
	if l.TokenBurst > 0 && l.TokensPerMinute == 0 {
		bad("%s.token_burst needs tokens_per_minute > 0, got token_burst %d", path, l.TokenBurst)
	}
	return errs
}

// validHeaderName reports whether h is an HTTP field name (RFC 9110 token).
func validHeaderName(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return h != ""
}

// parseDigest decodes a hex SHA-256 digest.
func parseDigest(s string) ([32]byte, error) {
	var d [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return d, fmt.Errorf("must be 64 hex digits (a SHA-256 digest), got %q", s)
	}
	copy(d[:], b)
	return d, nil
}

// Redacted returns c with every secret replaced by "<redacted>": keys,
// digests, the admin token and the Redis password.
func (c Config) Redacted() Config {
	const r = "<redacted>"
	red := func(s string) string {
		if s == "" {
			return ""
		}
		return r
	}
	keys := make([]KeyConfig, len(c.Auth.Keys))
	for i, k := range c.Auth.Keys {
		k.Key, k.SHA256 = red(k.Key), red(k.SHA256)
		keys[i] = k
	}
	c.Auth.Keys = keys
	c.Auth.AdminToken = red(c.Auth.AdminToken)
	c.Auth.AdminTokenSHA256 = red(c.Auth.AdminTokenSHA256)
	c.RateLimits.Redis.Conn = c.RateLimits.Redis.Conn.Redacted(r)
	return c
}
