// Package redisconf is the connection to a Redis server that the balancer's
// shared stores use: the token buckets of the rate limits
// (balancer/gateway, rate_limits.redis) and the response caches
// (balancer/respcache, response_cache.redis). Each embeds Conn inline in its
// own section and adds its own settings beside it, so the YAML keys, their
// checks and the client's options are written once.
package redisconf

import (
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Conn is how to reach a Redis server; Addr "" means no Redis (the store
// keeps its state in memory).
type Conn struct {
	// Addr is host:port ("": in memory).
	Addr     string `yaml:"addr"`
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	DB       int    `yaml:"db"`
	// KeyPrefix prefixes every key the store writes.
	KeyPrefix string `yaml:"key_prefix"`
	// Timeout bounds one round trip on the request path (dial, command,
	// script).
	Timeout time.Duration `yaml:"timeout"`
}

// Validate returns every problem of c, each named by prefix (the section's
// YAML path, such as "rate_limits.redis") and its key, with its value.
func (c Conn) Validate(prefix string) []error {
	var errs []error
	if c.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			errs = append(errs, fmt.Errorf("%s.addr must be host:port, got %q", prefix, c.Addr))
		}
	}
	if c.DB < 0 {
		errs = append(errs, fmt.Errorf("%s.db must be >= 0, got %d", prefix, c.DB))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("%s.timeout must be > 0, got %v", prefix, c.Timeout))
	}
	return errs
}

// Redacted returns c with its password replaced by with (when set).
func (c Conn) Redacted(with string) Conn {
	if c.Password != "" {
		c.Password = with
	}
	return c
}

// NewClient returns a client for c tuned for the request path: every call
// bounded by Timeout, a failed call returned at once (the stores fall back
// or miss; retrying inside the client would only add latency), one idle
// connection kept warm, and no CLIENT SETINFO (it needs Redis 7.2) nor
// maintenance notifications.
func (c Conn) NewClient() *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: c.Addr, Username: c.Username, Password: c.Password, DB: c.DB,
		DialTimeout: c.Timeout, ReadTimeout: c.Timeout, WriteTimeout: c.Timeout,
		ContextTimeoutEnabled:    true,
		MaxRetries:               -1,
		DisableIdentity:          true,
		MinIdleConns:             1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}
