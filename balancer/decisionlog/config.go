package decisionlog

import (
	"errors"
	"fmt"
)

// Config configures the decision log (the balancer's decision_log section).
type Config struct {
	// Path is the file the sampled records are appended to as JSON lines;
	// "-" is standard output and "" writes no file (the ring still keeps
	// the latest decisions).
	Path string `yaml:"path"`
	// SampleRatio is the share of decisions recorded, in [0, 1]: 1 records
	// every decision, 0 none (nor the ring).
	SampleRatio float64 `yaml:"sample_ratio"`
	// QueueSize bounds the records waiting for the writer; beyond it a
	// record is dropped and counted.
	QueueSize int `yaml:"queue_size"`
	// Recent is how many of the latest sampled decisions the ring keeps for
	// GET /debug/decisions and the web UI (0: none).
	Recent int `yaml:"recent"`
}

// DefaultConfig returns the defaults: every decision sampled into a ring of
// 256, no file, a queue of 4096 records.
func DefaultConfig() Config {
	return Config{SampleRatio: 1, QueueSize: 4096, Recent: 256}
}

// Limits of the config values.
const (
	maxQueueSize = 1 << 20
	maxRecent    = 1 << 16
)

// Validate reports every problem at once, each named by its YAML path under
// prefix (e.g. "decision_log") and its value.
func (c Config) Validate(prefix string) error {
	var errs []error
	if !(c.SampleRatio >= 0 && c.SampleRatio <= 1) {
		errs = append(errs, fmt.Errorf("%s.sample_ratio must be in [0, 1], got %v", prefix, c.SampleRatio))
	}
	if c.QueueSize < 1 || c.QueueSize > maxQueueSize {
		errs = append(errs, fmt.Errorf("%s.queue_size must be in [1, %d], got %d", prefix, maxQueueSize, c.QueueSize))
	}
	if c.Recent < 0 || c.Recent > maxRecent {
		errs = append(errs, fmt.Errorf("%s.recent must be in [0, %d], got %d", prefix, maxRecent, c.Recent))
	}
	return errors.Join(errs...)
}
