package gossip

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// Role is what a node does in the cluster.
type Role uint8

// Roles. The zero Role is invalid.
const (
	RoleSidecar  Role = 1
	RoleBalancer Role = 2
	RoleObserver Role = 3
)

// String returns the role's name.
func (r Role) String() string {
	switch r {
	case RoleSidecar:
		return "sidecar"
	case RoleBalancer:
		return "balancer"
	case RoleObserver:
		return "observer"
	default:
		return "role" + strconv.Itoa(int(r))
	}
}

// MarshalText implements encoding.TextMarshaler (JSON shows the name).
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Role) UnmarshalText(b []byte) error {
	if v, err := strconv.Atoi(string(b)); err == nil && v >= 0 && v < 256 {
		*r = Role(v) // the form of "role%d" names and old clients
		return nil
	}
	s, _ := strings.CutPrefix(string(b), "role")
	if v, err := strconv.Atoi(s); err == nil && v >= 0 && v < 256 {
		*r = Role(v)
		return nil
	}
	v, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseRole parses a role name.
func ParseRole(s string) (Role, error) {
	for _, r := range []Role{RoleSidecar, RoleBalancer, RoleObserver} {
		if s == r.String() {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unknown role %q (want sidecar, balancer or observer)", s)
}

// Profile names a set of memberlist timings.
type Profile string

// Timing profiles: LAN is memberlist's LAN defaults (production); Local is
// faster, for one machine and tests.
const (
	ProfileLAN   Profile = "lan"
	ProfileLocal Profile = "local"
)

// Config configures a Node. Start from DefaultConfig.
type Config struct {
	// NodeName must be unique in the cluster; empty means
	// DefaultNodeName(BindPort), the host name and the gossip port. Run fails
	// with ErrNameConflict when the cluster it joins already has the name.
	NodeName string
	Role     Role
	// BindAddr and BindPort are where memberlist listens (UDP and TCP); port 0
	// picks a free port.
	BindAddr string
	BindPort int
	// AdvertiseAddr and AdvertisePort are what other nodes dial; empty and 0
	// mean the bind address and the bound port.
	AdvertiseAddr string
	AdvertisePort int
	// Join lists seeds as host:port; DNS names are resolved again on every
	// join attempt, so a headless Service finds pods that came up later.
	Join []string
	// JoinRetryMin and JoinRetryMax bound the backoff between join attempts
	// while the node is alone (defaults 500ms and 30s).
	JoinRetryMin, JoinRetryMax time.Duration
	// SecretKey (16, 24 or 32 bytes, AES) encrypts all gossip; see LoadKeyFile.
	SecretKey []byte
	// ClusterLabel is written in front of every packet and stream; a node
	// with another label is refused. Empty disables it.
	ClusterLabel string
	// Meta is this node's metadata; Role is copied into it.
	Meta Meta
	// Profile picks memberlist timings (default lan).
	Profile Profile
	// LoadInterval is the period of announcements and summary deltas
	// (default 100ms).
	LoadInterval time.Duration
	// LoadMaxAge: a load report older than this is stale (default 1s).
	LoadMaxAge time.Duration
	// SummaryMaxAge: a summary not confirmed by an announcement or an update
	// within this is stale (default 2s).
	SummaryMaxAge time.Duration
	// ResyncAfter: a balancer whose view stays behind (a delta missing, or
	// announcements ahead of it) this long asks for a snapshot (default
	// 300ms, three load intervals).
	ResyncAfter time.Duration
	// ResyncInterval limits resync requests per sidecar on a balancer, and
	// snapshots per balancer on a sidecar (default 1s).
	ResyncInterval time.Duration
	// MemberRetention keeps a dead or departed member listed this long
	// (default 1m).
	MemberRetention time.Duration
	// LeaveTimeout bounds the leave broadcast on shutdown (default 2s).
	LeaveTimeout time.Duration
	// InboxSize is the capacity of the queue between memberlist's callbacks
	// and the node's processing; messages beyond it are dropped and counted
	// (default 4096).
	InboxSize int
	// Transport replaces memberlist's UDP/TCP transport (tests use an
	// in-memory one from gossiptest). Nil means real sockets.
	Transport memberlist.Transport
	// Observer, when set, is told about every applied summary message.
	Observer SummaryObserver
}

// SummaryObserver is told when a balancer applied a summary message; the
// scale benchmark uses it to measure freshness. Calls come from the node's
// processing goroutine and must not block.
type SummaryObserver interface {
	SummaryApplied(from string, epoch, seq uint64, oldest, at time.Time)
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		BindAddr:        "0.0.0.0",
		BindPort:        7946,
		JoinRetryMin:    500 * time.Millisecond,
		JoinRetryMax:    30 * time.Second,
		Profile:         ProfileLAN,
		LoadInterval:    100 * time.Millisecond,
		LoadMaxAge:      time.Second,
		SummaryMaxAge:   2 * time.Second,
		ResyncAfter:     300 * time.Millisecond,
		ResyncInterval:  time.Second,
		MemberRetention: time.Minute,
		LeaveTimeout:    2 * time.Second,
		InboxSize:       4096,
	}
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.NodeName) > maxNameLen {
		bad("gossip.node_name must have at most %d bytes, got %q", maxNameLen, c.NodeName)
	}
	if c.Role < RoleSidecar || c.Role > RoleObserver {
		bad("gossip.role must be sidecar, balancer or observer, got %v", c.Role)
	}
	if c.Transport == nil && net.ParseIP(c.BindAddr) == nil {
		bad("gossip.bind_addr must be an IP address, got %q", c.BindAddr)
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		bad("gossip.bind_port must be in [0,65535], got %d", c.BindPort)
	}
	if c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		bad("gossip.advertise_port must be in [0,65535], got %d", c.AdvertisePort)
	}
	for _, j := range c.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			bad("gossip.join entry %q must be host:port: %w", j, err)
		}
	}
	switch len(c.SecretKey) {
	case 0, 16, 24, 32:
	default:
		bad("gossip.secret_key must have 16, 24 or 32 bytes, got %d", len(c.SecretKey))
	}
	if len(c.ClusterLabel) > 255 {
		bad("gossip.cluster_label must have at most 255 bytes, got %d", len(c.ClusterLabel))
	}
	if c.Profile != ProfileLAN && c.Profile != ProfileLocal {
		bad("gossip.profile must be lan or local, got %q", c.Profile)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"join_retry_min", c.JoinRetryMin}, {"join_retry_max", c.JoinRetryMax}, {"load_interval", c.LoadInterval},
		{"load_max_age", c.LoadMaxAge}, {"summary_max_age", c.SummaryMaxAge}, {"resync_after", c.ResyncAfter},
		{"resync_interval", c.ResyncInterval}, {"member_retention", c.MemberRetention}, {"leave_timeout", c.LeaveTimeout},
	} {
		if d.v <= 0 {
			bad("gossip.%s must be > 0, got %v", d.name, d.v)
		}
	}
	if c.InboxSize <= 0 {
		bad("gossip.inbox_size must be > 0, got %d", c.InboxSize)
	}
	meta := c.Meta
	meta.Role = c.Role
	if _, err := meta.Marshal(); err != nil {
		bad("gossip.meta: %w", err)
	}
	return errors.Join(errs...)
}

// memberlistConfig builds memberlist's configuration from c.
func (c Config) memberlistConfig() *memberlist.Config {
	var mc *memberlist.Config
	if c.Profile == ProfileLocal {
		mc = memberlist.DefaultLocalConfig()
		mc.ProbeInterval = 500 * time.Millisecond
		mc.ProbeTimeout = 200 * time.Millisecond
		mc.SuspicionMult = 2
		mc.PushPullInterval = 5 * time.Second
		mc.GossipToTheDeadTime = 5 * time.Second
	} else {
		mc = memberlist.DefaultLANConfig()
	}
	// Our messages (random summary keys, tiny announcements) do not
	// compress, and memberlist's LZW cost a quarter of the CPU in the scale
	// test (docs/adr/0002-gossip-dissemination.md).
	mc.EnableCompression = false
	mc.Name = c.NodeName
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.AdvertisePort
	if c.AdvertisePort == 0 {
		mc.AdvertisePort = c.BindPort
	}
	mc.Label = c.ClusterLabel
	if len(c.SecretKey) > 0 {
		mc.SecretKey = c.SecretKey
	}
	mc.RequireNodeNames = false
	if c.Transport != nil {
		mc.Transport = c.Transport
	}
	return mc
}

// SuspicionTimeout returns the longest time memberlist keeps a failed node of
// a cluster of n nodes suspect before declaring it dead under this config's
// profile. A failed node is declared dead at most about n probe intervals
// plus this after it stopped answering.
func (c Config) SuspicionTimeout(n int) time.Duration {
	mc := c.memberlistConfig()
	nodeScale := math.Max(1, math.Log10(math.Max(1, float64(n))))
	base := time.Duration(float64(mc.SuspicionMult) * nodeScale * float64(mc.ProbeInterval))
	return base * time.Duration(mc.SuspicionMaxTimeoutMult)
}

// ProbeInterval returns the profile's failure-probe period.
func (c Config) ProbeInterval() time.Duration { return c.memberlistConfig().ProbeInterval }

// LoadKeyFile reads a gossip key: the file holds the key as base64 text (as
// `openssl rand -base64 32` prints it) or as 16, 24 or 32 raw bytes.
func LoadKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read gossip key: %w", err)
	}
	if s := strings.TrimSpace(string(b)); s != "" {
		if k, err := base64.StdEncoding.DecodeString(s); err == nil {
			switch len(k) {
			case 16, 24, 32:
				return k, nil
			}
		}
	}
	switch len(b) {
	case 16, 24, 32:
		return b, nil
	}
	return nil, fmt.Errorf("gossip key in %s: want base64 of 16, 24 or 32 bytes, or that many raw bytes", path)
}

// Timings are the dissemination periods and staleness limits a component's
// config file may set (the sidecar's and the balancer's gossip section). A
// zero field keeps DefaultConfig's value, so files that omit them behave as
// before. Tight values make the balancers' view fresher at the cost of
// bandwidth and CPU: `inferrail dev --exact-state` uses them for the
// exact-state oracle fleet.
type Timings struct {
	// LoadInterval is Config.LoadInterval: on a sidecar, the period of load
	// announcements and summary deltas (default 100ms).
	LoadInterval time.Duration `yaml:"load_interval"`
	// LoadMaxAge is Config.LoadMaxAge (default 1s).
	LoadMaxAge time.Duration `yaml:"load_max_age"`
	// SummaryMaxAge is Config.SummaryMaxAge (default 2s).
	SummaryMaxAge time.Duration `yaml:"summary_max_age"`
	// ResyncAfter is Config.ResyncAfter: how long a balancer's view may stay
	// behind before it asks for a snapshot (default 300ms).
	ResyncAfter time.Duration `yaml:"resync_after"`
	// ResyncInterval is Config.ResyncInterval: the least time between
	// snapshots per balancer and sidecar (default 1s).
	ResyncInterval time.Duration `yaml:"resync_interval"`
}

// Apply copies t's non-zero fields onto c.
func (t Timings) Apply(c *Config) {
	for _, f := range []struct {
		v   time.Duration
		dst *time.Duration
	}{
		{t.LoadInterval, &c.LoadInterval}, {t.LoadMaxAge, &c.LoadMaxAge}, {t.SummaryMaxAge, &c.SummaryMaxAge},
		{t.ResyncAfter, &c.ResyncAfter}, {t.ResyncInterval, &c.ResyncInterval},
	} {
		if f.v != 0 {
			*f.dst = f.v
		}
	}
}

// MinLoadInterval is the shortest LoadInterval a config file may set: below
// it a sidecar would spend its time sending announcements.
const MinLoadInterval = time.Millisecond

// Validate reports every invalid field at once, each named by prefix (the
// section's path, "gossip") and its key. Zero is valid (the default).
func (t Timings) Validate(prefix string) error {
	var errs []error
	for _, f := range []struct {
		key string
		v   time.Duration
	}{
		{"load_max_age", t.LoadMaxAge}, {"summary_max_age", t.SummaryMaxAge},
		{"resync_after", t.ResyncAfter}, {"resync_interval", t.ResyncInterval},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s.%s must be >= 0 (0: the default), got %v", prefix, f.key, f.v))
		}
	}
	if t.LoadInterval != 0 && t.LoadInterval < MinLoadInterval {
		errs = append(errs, fmt.Errorf("%s.load_interval must be 0 (the default) or >= %v, got %v", prefix, MinLoadInterval, t.LoadInterval))
	}
	return errors.Join(errs...)
}
