package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/inferrail/inferrail/internal/h2c"
)

// Config configures the upstream transports.
type Config struct {
	// DialTimeout bounds connecting to an upstream.
	DialTimeout time.Duration `yaml:"dial"`
	// FirstByteTimeout bounds the wait for an upstream's response headers
	// in one attempt (0: none; the request deadline still applies).
	FirstByteTimeout time.Duration `yaml:"first_byte"`
	// IdleConnTimeout closes pooled connections idle this long.
	IdleConnTimeout time.Duration `yaml:"idle_conn"`
	// MaxIdleConnsPerHost bounds the pooled HTTP/1.1 connections per
	// upstream.
	MaxIdleConnsPerHost int `yaml:"max_idle_conns_per_host"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		DialTimeout:         2 * time.Second,
		FirstByteTimeout:    60 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 256,
	}
}

// Validate reports every invalid field at once; path prefixes the names.
func (c Config) Validate(path string) error {
	var errs []error
	if c.DialTimeout <= 0 {
		errs = append(errs, fmt.Errorf("%s.dial must be > 0, got %v", path, c.DialTimeout))
	}
	if c.FirstByteTimeout < 0 {
		errs = append(errs, fmt.Errorf("%s.first_byte must be >= 0, got %v", path, c.FirstByteTimeout))
	}
	if c.IdleConnTimeout <= 0 {
		errs = append(errs, fmt.Errorf("%s.idle_conn must be > 0, got %v", path, c.IdleConnTimeout))
	}
	if c.MaxIdleConnsPerHost < 1 {
		errs = append(errs, fmt.Errorf("%s.max_idle_conns_per_host must be >= 1, got %d", path, c.MaxIdleConnsPerHost))
	}
	return errors.Join(errs...)
}

// DialError reports that an attempt could not connect to its upstream: the
// request was never sent, so it may be retried anywhere.
type DialError struct {
	Addr string
	Err  error
}

// Error returns the message.
func (e *DialError) Error() string { return fmt.Sprintf("dial %s: %v", e.Addr, e.Err) }

// Unwrap returns the cause.
func (e *DialError) Unwrap() error { return e.Err }

// newTransport returns a pooled transport speaking HTTP/1.1 or, with useH2C,
// only HTTP/2 with prior knowledge.
func newTransport(cfg Config, useH2C bool) *http.Transport {
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, &DialError{Addr: addr, Err: err}
		}
		return c, nil
	}
	t := &http.Transport{
		Proxy:                  nil, // upstreams are reached directly, never through an HTTP proxy
		DialContext:            dial,
		MaxIdleConns:           0,
		MaxIdleConnsPerHost:    cfg.MaxIdleConnsPerHost,
		IdleConnTimeout:        cfg.IdleConnTimeout,
		ResponseHeaderTimeout:  0, // per attempt, by context (Send)
		DisableCompression:     true,
		MaxResponseHeaderBytes: 1 << 20,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	if useH2C {
		t.Protocols = h2c.ClientProtocols()
		t.TLSNextProto = nil
	}
	return t
}
