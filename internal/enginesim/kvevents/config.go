package kvevents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Publisher kinds, the values of Config.Publisher.
const (
	// PublisherNull discards every event (vLLM's NullEventPublisher).
	PublisherNull = "null"
	// PublisherZMQ publishes over ZMQ (vLLM's ZmqEventPublisher).
	PublisherZMQ = "zmq"
)

// Config is vLLM's KVEventsConfig, the value of --kv-events-config. The zero
// value is not useful; start from DefaultConfig or ParseConfig.
type Config struct {
	// EnableKVCacheEvents is the master switch (enable_kv_cache_events).
	EnableKVCacheEvents bool
	// Publisher is "null", "zmq", or "" (JSON null) which resolves to "zmq"
	// when EnableKVCacheEvents is set and to "null" otherwise.
	Publisher string
	// Endpoint is the PUB socket's address for DP rank 0 (endpoint).
	Endpoint string
	// ReplayEndpoint is the ROUTER socket's address for DP rank 0, or "" for
	// no replay (replay_endpoint).
	ReplayEndpoint string
	// BufferSteps is the replay ring's size in batches (buffer_steps).
	BufferSteps int
	// HWM is the PUB socket's high-water mark in messages; 0 is unlimited (hwm).
	HWM int
	// MaxQueueSize bounds the batches waiting between the engine and the
	// sender (max_queue_size). A full queue drops batches: the simulator
	// never blocks its engine, where vLLM would block its scheduler.
	MaxQueueSize int
	// Topic is the first frame of every live message (topic).
	Topic string
}

// DefaultConfig returns vLLM's defaults: events disabled, endpoint
// "tcp://*:5557", no replay, 10000 buffered steps, hwm and queue 100000.
func DefaultConfig() Config {
	return Config{
		Endpoint:     "tcp://*:5557",
		BufferSteps:  10000,
		HWM:          100000,
		MaxQueueSize: 100000,
	}
}

// Enabled reports whether the configuration publishes events: the master
// switch is on and the publisher resolves to "zmq".
func (c Config) Enabled() bool {
	return c.EnableKVCacheEvents && c.resolvedPublisher() == PublisherZMQ
}

func (c Config) resolvedPublisher() string {
	if c.Publisher != "" {
		return c.Publisher
	}
	if c.EnableKVCacheEvents {
		return PublisherZMQ
	}
	return PublisherNull
}

// Validate reports every problem of c at once, each naming its key and value.
// Endpoints are checked only when c is Enabled, as vLLM opens them only then.
func (c Config) Validate() error {
	var errs []error
	if c.Publisher != "" && c.Publisher != PublisherNull && c.Publisher != PublisherZMQ {
		errs = append(errs, fmt.Errorf("publisher must be %q or %q, got %q", PublisherNull, PublisherZMQ, c.Publisher))
	}
	if c.BufferSteps < 0 {
		errs = append(errs, fmt.Errorf("buffer_steps must be >= 0, got %d", c.BufferSteps))
	}
	if c.HWM < 0 {
		errs = append(errs, fmt.Errorf("hwm must be >= 0, got %d", c.HWM))
	}
	if c.MaxQueueSize < 1 {
		errs = append(errs, fmt.Errorf("max_queue_size must be >= 1 (an unbounded queue is not supported), got %d", c.MaxQueueSize))
	}
	if c.Enabled() {
		if err := checkEndpoint(c.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("endpoint %q: %w", c.Endpoint, err))
		}
		if c.ReplayEndpoint != "" {
			if err := checkEndpoint(c.ReplayEndpoint); err != nil {
				errs = append(errs, fmt.Errorf("replay_endpoint %q: %w", c.ReplayEndpoint, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("kv events config: %w", errors.Join(errs...))
	}
	return nil
}

// checkEndpoint accepts the transports both vLLM (libzmq) and go-zeromq/zmq4
// implement.
func checkEndpoint(ep string) error {
	scheme, rest, ok := strings.Cut(ep, "://")
	if !ok || rest == "" {
		return errors.New("want scheme://address")
	}
	switch scheme {
	case "tcp":
		if !strings.Contains(rest, ":") {
			return errors.New("tcp endpoint needs a port")
		}
	case "ipc", "inproc":
	default:
		return fmt.Errorf("unsupported transport %q (want tcp, ipc or inproc)", scheme)
	}
	return nil
}

// ParseConfig parses the JSON text of vLLM's --kv-events-config over
// DefaultConfig, resolves a null publisher, and validates the result. Unknown
// keys and values of the wrong type are errors naming the key and the value;
// all problems are reported at once.
func ParseConfig(jsonText string) (Config, error) {
	cfg := DefaultConfig()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(jsonText), &raw); err != nil {
		return cfg, fmt.Errorf("kv events config: want a JSON object: %w", err)
	}
	if raw == nil {
		return cfg, errors.New("kv events config: want a JSON object, got null")
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	var errs []error
	for _, k := range keys {
		v := bytes.TrimSpace(raw[k])
		var err error
		switch k {
		case "enable_kv_cache_events":
			err = decodeBool(v, &cfg.EnableKVCacheEvents)
		case "publisher":
			err = decodeString(v, true, &cfg.Publisher)
		case "endpoint":
			err = decodeString(v, false, &cfg.Endpoint)
		case "replay_endpoint":
			err = decodeString(v, true, &cfg.ReplayEndpoint)
		case "buffer_steps":
			err = decodeInt(v, &cfg.BufferSteps)
		case "hwm":
			err = decodeInt(v, &cfg.HWM)
		case "max_queue_size":
			err = decodeInt(v, &cfg.MaxQueueSize)
		case "topic":
			err = decodeString(v, false, &cfg.Topic)
		default:
			errs = append(errs, fmt.Errorf("unknown key %q (value %s)", k, clip(v)))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w, got %s", k, err, clip(v)))
		}
	}
	if len(errs) > 0 {
		return cfg, fmt.Errorf("kv events config: %w", errors.Join(errs...))
	}
	cfg.Publisher = cfg.resolvedPublisher()
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func decodeBool(v []byte, dst *bool) error {
	switch string(v) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return errors.New("want true or false")
	}
	return nil
}

func decodeString(v []byte, nullable bool, dst *string) error {
	if string(v) == "null" {
		if !nullable {
			return errors.New("want a string")
		}
		*dst = ""
		return nil
	}
	if len(v) == 0 || v[0] != '"' {
		if nullable {
			return errors.New("want a string or null")
		}
		return errors.New("want a string")
	}
	return json.Unmarshal(v, dst)
}

func decodeInt(v []byte, dst *int) error {
	n, err := strconv.ParseInt(string(v), 10, 0)
	if err != nil {
		return errors.New("want an integer")
	}
	*dst = int(n)
	return nil
}

// clip renders a raw JSON value for an error message, shortened.
func clip(v []byte) string {
	const limit = 64
	if len(v) > limit {
		return string(v[:limit]) + "..."
	}
	return string(v)
}
