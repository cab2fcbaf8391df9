package respcache

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/inferrail/inferrail/internal/redisconf"
)

// Config is the response_cache section of the balancer config.
type Config struct {
	// TTL is how long a stored response is served.
	TTL time.Duration `yaml:"ttl"`
	// MaxBytes is the in-memory store's byte budget (least recently used
	// entries are evicted past it). With Redis, Redis's own maxmemory
	// (volatile-lru) bounds the shared store instead.
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxEntryBytes bounds one stored response; a larger one is not stored.
	MaxEntryBytes int64 `yaml:"max_entry_bytes"`
	// SampledModels lists models whose sampled requests (temperature not 0
	// and no seed) are cached too; other models' are bypassed.
	SampledModels []string       `yaml:"sampled_models"`
	Exact         ExactConfig    `yaml:"exact"`
	Semantic      SemanticConfig `yaml:"semantic"`
	Redis         RedisConfig    `yaml:"redis"`
}

// ExactConfig configures the exact cache.
type ExactConfig struct {
	// Enabled turns the exact cache on.
	Enabled bool `yaml:"enabled"`
}

// SemanticConfig configures the semantic cache.
type SemanticConfig struct {
	// Enabled turns the semantic cache on; it needs Embeddings.
	Enabled bool `yaml:"enabled"`
	// MaxDistance is the largest cosine distance (1 - cosine similarity,
	// in [0, 2]) at which a stored question answers a new one. It is a
	// distance, not a similarity: 0 accepts only the same direction, and
	// a smaller value is stricter.
	MaxDistance float64 `yaml:"max_distance"`
	// MaxEntries bounds the vector index; the oldest vectors leave first.
	MaxEntries int `yaml:"max_entries"`
	// Dimensions is the embedding size the index expects (0: the size of
	// the first embedding). An embedding of another size is an error.
	Dimensions int              `yaml:"dimensions"`
	Embeddings EmbeddingsConfig `yaml:"embeddings"`
}

// EmbeddingsConfig names an OpenAI-compatible /v1/embeddings endpoint.
type EmbeddingsConfig struct {
	// URL is the base URL; /v1/embeddings is appended unless the path
	// already ends with it.
	URL string `yaml:"url"`
	// Model is the embedding model's name.
	Model string `yaml:"model"`
	// APIKey is sent as "Authorization: Bearer APIKey" ("": none).
	APIKey string `yaml:"api_key"`
	// Timeout is the hard bound on one embedding call: past it the request
	// goes on without the semantic cache.
	Timeout time.Duration `yaml:"timeout"`
	// RetryInterval is how long after a failed call the endpoint is left
	// alone (requests skip the semantic cache meanwhile).
	RetryInterval time.Duration `yaml:"retry_interval"`
	// MaxInputBytes bounds the text sent to be embedded; a longer question
	// skips the semantic cache.
	MaxInputBytes int `yaml:"max_input_bytes"`
}

// RedisConfig is the shared store: the connection (addr, credentials, db,
// key_prefix for every key the caches write, timeout; Addr "" keeps
// everything in memory) and the vector index's rescan period.
type RedisConfig struct {
	redisconf.Conn `yaml:",inline"`
	// RescanInterval is how often the vector index is rebuilt from a full
	// scan of Redis, besides following the stream of inserts.
	RescanInterval time.Duration `yaml:"rescan_interval"`
}

// DefaultConfig returns the defaults: both caches off.
func DefaultConfig() Config {
	return Config{
		TTL: 10 * time.Minute, MaxBytes: 256 << 20, MaxEntryBytes: 4 << 20,
		Semantic: SemanticConfig{
			MaxDistance: 0.1, MaxEntries: 100_000,
			Embeddings: EmbeddingsConfig{Timeout: 100 * time.Millisecond, RetryInterval: time.Second, MaxInputBytes: 32 << 10},
		},
		Redis: RedisConfig{Conn: redisconf.Conn{KeyPrefix: "inferrail:rc:", Timeout: 100 * time.Millisecond}, RescanInterval: 5 * time.Minute},
	}
}

// Redacted returns c with its secrets replaced: the embeddings api_key and
// URL credentials, the Redis password.
func (c Config) Redacted() Config {
	const r = "<redacted>"
	e := &c.Semantic.Embeddings
	if e.APIKey != "" {
		e.APIKey = r
	}
	if u, err := url.Parse(e.URL); err == nil && u.User != nil {
		u.User = url.UserPassword("redacted", "redacted")
		e.URL = u.String()
	}
	c.Redis.Conn = c.Redis.Conn.Redacted(r)
	c.SampledModels = slices.Clone(c.SampledModels)
	return c
}

// On reports whether some cache is enabled.
func (c *Config) On() bool { return c.Exact.Enabled || c.Semantic.Enabled }

// Validate reports every problem at once, each with its YAML path (under
// prefix, e.g. "response_cache.") and value.
func (c *Config) Validate(prefix string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(prefix+format, args...)) }
	if c.TTL <= 0 {
		bad("ttl must be > 0, got %v", c.TTL)
	}
	if c.MaxBytes < 1 {
		bad("max_bytes must be >= 1, got %d", c.MaxBytes)
	}
	if c.MaxEntryBytes < 1 || c.MaxEntryBytes > c.MaxBytes {
		bad("max_entry_bytes must be in [1, max_bytes], got %d", c.MaxEntryBytes)
	}
	for i, m := range c.SampledModels {
		if m == "" {
			bad("sampled_models[%d] must not be empty", i)
		}
	}
	s := c.Semantic
	// !(x >= 0 && x <= 2) also rejects NaN.
	if !(s.MaxDistance >= 0 && s.MaxDistance <= 2) {
		bad("semantic.max_distance must be a cosine distance in [0, 2] (0: identical, smaller is stricter; it is not a similarity), got %v", s.MaxDistance)
	}
	if s.MaxEntries < 1 {
		bad("semantic.max_entries must be >= 1, got %d", s.MaxEntries)
	}
	if s.Dimensions < 0 || s.Dimensions > maxDimensions {
		bad("semantic.dimensions must be in [0, %d] (0: the first embedding's), got %d", maxDimensions, s.Dimensions)
	}
	e := s.Embeddings
	if s.Enabled {
		if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("semantic.embeddings.url must be an http:// or https:// URL, got %q", e.URL)
		}
		if e.Model == "" {
			bad("semantic.embeddings.model must not be empty")
		}
	}
	if e.Timeout <= 0 {
		bad("semantic.embeddings.timeout must be > 0, got %v", e.Timeout)
	}
	if e.RetryInterval < 0 {
		bad("semantic.embeddings.retry_interval must be >= 0, got %v", e.RetryInterval)
	}
	if e.MaxInputBytes < 1 {
		bad("semantic.embeddings.max_input_bytes must be >= 1, got %d", e.MaxInputBytes)
	}
	r := c.Redis
	errs = append(errs, r.Conn.Validate(prefix+"redis")...)
	if r.RescanInterval <= 0 {
		bad("redis.rescan_interval must be > 0, got %v", r.RescanInterval)
	}
	return errors.Join(errs...)
}
