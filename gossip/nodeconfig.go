package gossip

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/inferrail/inferrail/internal/yamlconf"
)

// NodeConfig is the part of a component's `gossip:` YAML section that every
// role shares: the balancer's and the sidecar's config embed it inline, and
// Config maps it onto a node's Config. Checking the values (with the section's
// path) is Validate's, which both components call; Config assumes they
// passed.
type NodeConfig struct {
	// Bind is the gossip bind address IP:port (port 0 picks one).
	Bind string `yaml:"bind"`
	// Advertise is the address other nodes reach this node at: an IP, or
	// host:port (Validate); empty means the component's default (the bind
	// address, or for a sidecar POD_IP first).
	Advertise string `yaml:"advertise"`
	// NodeName is the unique node name; empty means the component's default
	// (see its GossipConfig).
	NodeName string `yaml:"node_name"`
	// Join lists seed nodes (host:port; DNS names are re-resolved on retries).
	Join []string `yaml:"join"`
	// KeyFile holds the gossip encryption key (16, 24 or 32 bytes, raw or
	// base64; LoadKeyFile). Empty means no encryption.
	KeyFile string `yaml:"key_file"`
	// ClusterLabel separates clusters that share a network.
	ClusterLabel string `yaml:"cluster_label"`
	// Profile picks the failure-detection timings: lan (production) or local
	// (one machine: faster probes).
	Profile string `yaml:"profile"`
	// Timings set the announcement and summary-delta period (load_interval),
	// how long gossiped load and summaries stay trusted (load_max_age,
	// summary_max_age) and how soon a view that fell behind asks a sidecar
	// for a snapshot (resync_after, resync_interval); zero keeps the default.
	Timings `yaml:",inline"`
}

// Config returns DefaultConfig with role and the section's values applied:
// the bind address split into BindAddr and BindPort, the advertise address
// into AdvertiseAddr and, when it has one, AdvertisePort; NodeName when set
// (else DefaultConfig's, which New fills in); Join, ClusterLabel, Profile, the
// non-zero Timings, and the key read from KeyFile. The caller adds Meta.
func (c NodeConfig) Config(role Role) (Config, error) {
	gc := DefaultConfig()
	gc.Role = role
	host, port, err := net.SplitHostPort(c.Bind)
	if err != nil {
		return gc, fmt.Errorf("gossip.bind: %w", err)
	}
	gc.BindAddr = host
	if gc.BindPort, err = strconv.Atoi(port); err != nil {
		return gc, fmt.Errorf("gossip.bind port: %w", err)
	}
	if a := c.Advertise; a != "" {
		if h, p, err := net.SplitHostPort(a); err == nil {
			gc.AdvertiseAddr = h
			gc.AdvertisePort, _ = strconv.Atoi(p)
		} else {
			gc.AdvertiseAddr = a
		}
	}
	if c.NodeName != "" {
		gc.NodeName = c.NodeName
	}
	gc.Join = c.Join
	gc.ClusterLabel = c.ClusterLabel
	gc.Profile = Profile(c.Profile)
	c.Timings.Apply(&gc)
	if c.KeyFile != "" {
		if gc.SecretKey, err = LoadKeyFile(c.KeyFile); err != nil {
			return gc, err
		}
	}
	return gc, nil
}

// Validate reports every invalid value at once, each named by prefix (the
// section's path, "gossip") and its key: the bind address must be IP:port,
// the advertise address an IP or host:port, every seed host:port, the
// profile lan or local, the cluster label at most 255 bytes, and the
// Timings as Timings.Validate checks them.
func (c NodeConfig) Validate(prefix string) error {
	var errs []error
	bad := func(key string, v any, why string) {
		errs = append(errs, fmt.Errorf("%s.%s %s, got %q", prefix, key, why, fmt.Sprint(v)))
	}
	if host, _, err := net.SplitHostPort(c.Bind); err != nil || net.ParseIP(host) == nil || !yamlconf.IsHostPort(c.Bind) {
		bad("bind", c.Bind, "must be IP:port")
	}
	if a := c.Advertise; a != "" && net.ParseIP(a) == nil && !yamlconf.IsHostPort(a) {
		bad("advertise", a, "must be an IP or host:port")
	}
	for i, j := range c.Join {
		if !yamlconf.IsHostPort(j) {
			bad(fmt.Sprintf("join[%d]", i), j, "must be host:port")
		}
	}
	if p := Profile(c.Profile); p != ProfileLAN && p != ProfileLocal {
		bad("profile", c.Profile, "must be lan or local")
	}
	if len(c.ClusterLabel) > 255 {
		bad("cluster_label", fmt.Sprintf("%d bytes", len(c.ClusterLabel)), "must have at most 255 bytes")
	}
	if err := c.Timings.Validate(prefix); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
