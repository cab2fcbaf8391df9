package zmqsub

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inferrail/inferrail/internal/zmtpguard"
)

// Config configures a Subscriber.
type Config struct {
	// Host is the engine's host (IP or name) to connect to.
	Host string
	// BasePort is the PUB port of data-parallel rank 0 (vLLM default 5557);
	// rank r publishes on BasePort+r.
	BasePort int
	// Ranks is the number of data-parallel ranks to subscribe to (>= 1).
	Ranks int
	// FirstRank is the global rank of the first one (for a node that hosts
	// ranks 2 and 3 of a larger deployment).
	FirstRank int
	// Topic is the subscription prefix ("" for every message).
	Topic string
	// ReplayBasePort is the replay ROUTER port of rank 0; 0 disables replay.
	ReplayBasePort int
	// ReplayTimeout bounds one replay exchange.
	ReplayTimeout time.Duration
	// DialTimeout bounds one connect.
	DialTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the reconnect backoff.
	ReconnectMin, ReconnectMax time.Duration
	// Buffer is the capacity of the Updates channel.
	Buffer int
	// MaxMessageBytes bounds one message read from the engine's sockets (the
	// sum of its frames, each counting zmtpguard.FrameOverhead more); a
	// larger one fails the connection before it is allocated.
	MaxMessageBytes int64
	// DeliverTimeout is how long a rank's reader waits for room in Updates
	// before dropping a batch (which then shows as a gap and is replayed).
	DeliverTimeout time.Duration
}

// Defaults.
const (
	DefaultReplayTimeout  = 2 * time.Second
	DefaultDialTimeout    = 2 * time.Second
	DefaultReconnectMin   = 100 * time.Millisecond
	DefaultReconnectMax   = 5 * time.Second
	DefaultBuffer         = 1024
	DefaultDeliverTimeout = 100 * time.Millisecond
	// DefaultMaxMessageBytes leaves a wide margin over vLLM's batches (KBs
	// to a few MB).
	DefaultMaxMessageBytes = zmtpguard.DefaultMaxMessageBytes
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Ranks == 0 {
		c.Ranks = 1
	}
	if c.ReplayTimeout == 0 {
		c.ReplayTimeout = DefaultReplayTimeout
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.ReconnectMin == 0 {
		c.ReconnectMin = DefaultReconnectMin
	}
	if c.ReconnectMax == 0 {
		c.ReconnectMax = DefaultReconnectMax
	}
	if c.Buffer == 0 {
		c.Buffer = DefaultBuffer
	}
	if c.DeliverTimeout == 0 {
		c.DeliverTimeout = DefaultDeliverTimeout
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return c
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Host == "" {
		errs = append(errs, errors.New("kv_events.host must be set"))
	}
	if c.BasePort <= 0 || c.BasePort > 65535 {
		errs = append(errs, fmt.Errorf("kv_events.base_port must be in 1..65535, got %d", c.BasePort))
	}
	if c.Ranks < 1 {
		errs = append(errs, fmt.Errorf("kv_events.ranks must be >= 1, got %d", c.Ranks))
	}
	if c.FirstRank < 0 {
		errs = append(errs, fmt.Errorf("kv_events.first_rank must be >= 0, got %d", c.FirstRank))
	}
	last := c.FirstRank + c.Ranks - 1
	if c.BasePort > 0 && c.BasePort+last > 65535 {
		errs = append(errs, fmt.Errorf("kv_events.base_port %d + rank %d exceeds 65535", c.BasePort, last))
	}
	if c.ReplayBasePort < 0 || c.ReplayBasePort > 65535 || (c.ReplayBasePort > 0 && c.ReplayBasePort+last > 65535) {
		errs = append(errs, fmt.Errorf("kv_events.replay_base_port must be 0 or a port with room for every rank, got %d", c.ReplayBasePort))
	}
	// Rank r uses BasePort+r and ReplayBasePort+r: the two ranges of
	// len Ranks must not overlap (docs/engines.md#vllm-sockets-ports-and-data-parallel-ranks, the port-collision trap).
	span := c.Ranks - 1
	if c.ReplayBasePort > 0 && c.BasePort > 0 && c.ReplayBasePort <= c.BasePort+span && c.BasePort <= c.ReplayBasePort+span {
		errs = append(errs, fmt.Errorf("kv_events.replay_base_port %d overlaps the ports of ranks from base_port %d (space them by at least the rank count)", c.ReplayBasePort, c.BasePort))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"replay_timeout", c.ReplayTimeout}, {"dial_timeout", c.DialTimeout}, {"reconnect_min", c.ReconnectMin},
		{"reconnect_max", c.ReconnectMax}, {"deliver_timeout", c.DeliverTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("kv_events.%s must be > 0, got %v", d.name, d.v))
		}
	}
	if c.ReconnectMax < c.ReconnectMin {
		errs = append(errs, fmt.Errorf("kv_events.reconnect_max %v must be >= reconnect_min %v", c.ReconnectMax, c.ReconnectMin))
	}
	if c.MaxMessageBytes < 1<<10 || c.MaxMessageBytes > 1<<30 {
		errs = append(errs, fmt.Errorf("kv_events.max_message_bytes must be in 1KiB..1GiB, got %d", c.MaxMessageBytes))
	}
	if c.Buffer < 1 {
		errs = append(errs, fmt.Errorf("kv_events.buffer must be >= 1, got %d", c.Buffer))
	}
	return errors.Join(errs...)
}

func (c Config) endpoint(port, rank int) string {
	return fmt.Sprintf("tcp://%s:%d", hostForURL(c.Host), port+rank)
}

func hostForURL(h string) string {
	if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
		return "[" + h + "]" // IPv6 literal
	}
	return h
}
