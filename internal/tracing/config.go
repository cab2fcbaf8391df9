package tracing

import (
	"errors"
	"fmt"
	"net/url"
)

// DefaultSampleRatio is the share of new traces sampled when the config
// does not say (a request that arrives with a sampled traceparent is always
// traced).
const DefaultSampleRatio = 0.1

// Config is the tracing part of the observability section of the balancer
// and sidecar configs.
type Config struct {
	// OTLPEndpoint is the collector's OTLP/HTTP URL ("": tracing off). A URL
	// without a path (http://collector:4318) gets the traces path
	// /v1/traces; a URL with a path is used as it is.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// SampleRatio is the share of traces started here that are sampled, in
	// [0, 1]. A request whose traceparent carries a decision keeps it.
	SampleRatio float64 `yaml:"sample_ratio"`
}

// DefaultConfig is tracing off, with the default ratio for when an endpoint
// is set.
func DefaultConfig() Config { return Config{SampleRatio: DefaultSampleRatio} }

// Enabled reports whether an endpoint is set.
func (c Config) Enabled() bool { return c.OTLPEndpoint != "" }

// Validate reports every problem, each named by its YAML path under prefix
// (e.g. "observability") and its value.
func (c Config) Validate(prefix string) error {
	var errs []error
	if c.OTLPEndpoint != "" {
		if _, err := tracesURL(c.OTLPEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("%s.otlp_endpoint must be an http:// or https:// URL with a host, got %q", prefix, c.OTLPEndpoint))
		}
	}
	if !(c.SampleRatio >= 0 && c.SampleRatio <= 1) {
		errs = append(errs, fmt.Errorf("%s.sample_ratio must be in [0, 1], got %v", prefix, c.SampleRatio))
	}
	return errors.Join(errs...)
}

// tracesPath is the OTLP/HTTP traces path of the specification.
const tracesPath = "/v1/traces"

// tracesURL returns the URL spans are posted to.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("not an http:// or https:// URL with a host")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = tracesPath
	}
	return u.String(), nil
}
