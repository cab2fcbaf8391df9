package gossip

import (
	"fmt"
	"net"
	"strconv"
)

// NodeConfig is the part of a component's `gossip:` YAML section that every
// role shares: the balancer's and the sidecar's config embed it inline, and
// Config maps it onto a node's Config. Checking the values (with the section's
// path) stays with each component's Validate; Config assumes they passed.
type NodeConfig struct {
	// Bind is the gossip bind address IP:port (port 0 picks one).
	Bind string `yaml:"bind"`
	// Advertise is the address other nodes reach this node at (IP or host,
	// optionally with :port); empty means the component's default (the
	// bind address, or for a sidecar POD_IP first).
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
