package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Result is one run: its configuration, workload, records and summary. It is
// written as JSON (records included) and read back by report and compare.
type Result struct {
	Config   Config         `json:"config"`
	Workload WorkloadConfig `json:"workload"`
	// Repetition numbers the run among repetitions with new seeds.
	Repetition int `json:"repetition"`
	// Run says what a compared run was (zero for a single bench run).
	Run RunInfo `json:"run"`
	// Routing is the models[].routing block the compared run's balancers
	// had in place of the defaults (bench compare --routing, --cost-model),
	// by its config keys, without the policy (Run's) and seed; nil: the
	// defaults, or no balancer (nginx).
	Routing map[string]any `json:"routing,omitempty"`
	// Elapsed is the wall time of the run.
	Elapsed time.Duration `json:"elapsed_ns"`
	Summary Summary       `json:"summary"`
	// EngineCounters is the change of the engines' KV-cache counters over
	// the run (nil when not scraped).
	EngineCounters *CacheCounters `json:"engine_counters,omitempty"`
	// Capacity is the measured capacity that set the base load of the
	// comparison this run belongs to (nil without a capacity search).
	Capacity *Capacity `json:"capacity,omitempty"`
	// Bounds are the hit-rate ceilings of the run's request sequence.
	Bounds  *Bounds  `json:"bounds,omitempty"`
	Records []Record `json:"records"`

	prompts []Prompt // the sent prompts' blocks, in arrival order
}

// Prompts returns the blocks of the prompts the run sent, in arrival order
// (empty for a result read from JSON).
func (r *Result) Prompts() []Prompt { return r.prompts }

// WriteFile writes r as JSON (compact: results hold every request).
func (r *Result) WriteFile(path string) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// ReadResult reads a result written by WriteFile.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode result %s: %w", path, err)
	}
	// Goodput from the records, by today's definition (Summary.Goodput): a
	// result written before 2026-12-04 divided by the span to its last
	// answer's end; and the requests whose usage arrived (Summary.Usage),
	// which results written before 2026-12-06 lack. A result without
	// records keeps its summary's.
	if len(r.Records) > 0 {
		s := Summarize(r.Records, r.Config.SLO)
		r.Summary.Goodput, r.Summary.Usage = s.Goodput, s.Usage
	}
	return &r, nil
}
