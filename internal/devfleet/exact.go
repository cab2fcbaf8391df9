package devfleet

import (
	"fmt"
	"strings"
	"time"
)

// The exact-state settings (Config.ExactState). Each is the tightest value
// the component accepts, or the tightest that still leaves the children
// CPU for serving on a small machine; docs/dev-fleet.md explains each.
const (
	// ExactLoadInterval is the sidecars' gossip period: load announcements
	// and summary deltas (default 100ms).
	ExactLoadInterval = 5 * time.Millisecond
	// ExactScrapeInterval is the sidecars' engine metrics scrape period, which
	// is also how often the sidecar hands its load (engine queue, data-path
	// in-flight counts) to the gossip. 10ms is the sidecar's minimum
	// (default 100ms).
	ExactScrapeInterval = 10 * time.Millisecond
	// ExactFalsePositiveRate is the bloom summaries' target false-positive
	// rate (default 0.001). Below it the 32-bit summary keys dominate: a
	// stranger's key equals a held one at n/2^32 (about 6e-6 at 27,500
	// blocks).
	ExactFalsePositiveRate = 1e-7
	// ExactRebuildRemovedFraction starts a new summary epoch (a snapshot
	// rebuilt from the blocks held) once evictions since the last one pass
	// this fraction of the blocks held (default 0.25). Deltas carry the
	// evictions, so balancers stop matching an evicted block within a load
	// interval either way; what the rebuild clears is the evicted blocks'
	// bits, which raise the filter's false-positive rate as if it held that
	// many more blocks: at 5%, from 1e-7 to at most about 2e-7 (at 25%, 3e-6).
	ExactRebuildRemovedFraction = 0.05
	// ExactResyncAfter is how long a balancer waits for a missing delta or
	// snapshot before it asks for one: three load intervals, as by default.
	ExactResyncAfter = 3 * ExactLoadInterval
	// ExactResyncInterval rate-limits snapshots per sidecar and balancer:
	// ten load intervals, as by default.
	ExactResyncInterval = 10 * ExactLoadInterval
)

// sidecarExactYAML is the config file of a sidecar in an exact-state fleet;
// its flags set everything else.
func sidecarExactYAML() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# exact-state oracle settings (inferrail dev --exact-state)\n")
	fmt.Fprintf(&sb, "scrape:\n  interval: %s\n", ExactScrapeInterval)
	fmt.Fprintf(&sb, "summary:\n  false_positive_rate: %g\n  rebuild_removed_fraction: %g\n", ExactFalsePositiveRate, ExactRebuildRemovedFraction)
	fmt.Fprintf(&sb, "gossip:\n  load_interval: %s\n  resync_interval: %s\n", ExactLoadInterval, ExactResyncInterval)
	return sb.String()
}

// balancerExactGossip is the lines a balancer's gossip section gets in an
// exact-state fleet. The max ages keep their defaults: they do not delay the
// view, they only decide when a view is too old to trust, and with reports
// every few milliseconds a tighter limit would only make a balancer that
// misses a beat on a busy machine fall back to its own counts and
// prefix_hash placement, away from the oracle.
func balancerExactGossip() string {
	return fmt.Sprintf("  resync_after: %s\n  resync_interval: %s\n", ExactResyncAfter, ExactResyncInterval)
}
