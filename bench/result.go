package bench

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Result is one run: its configuration, workload, records and summary. It is
// written as JSON (records included; gzip-compressed as bench compare writes
// it) and read back by report and compare.
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

// GzipSuffix ends the name of a gzip-compressed result file: WriteFile
// compresses a path that ends in it, and bench compare writes its runs so.
const GzipSuffix = ".json.gz"

// WriteFile writes r as JSON (compact: results hold every request),
// gzip-compressed at the best compression when path ends in GzipSuffix
// (".json.gz"). The gzip header holds no name or time, so the same result
// gives the same bytes.
func (r *Result) WriteFile(path string) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	b = append(b, '\n')
	if strings.HasSuffix(path, GzipSuffix) {
		if b, err = gzipBytes(b); err != nil {
			return fmt.Errorf("compress result %s: %w", path, err)
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// IsGzip reports whether b starts with gzip's magic bytes (0x1f 0x8b).
func IsGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// ReadResult reads a result written by WriteFile: plain JSON or gzip
// (told by its first bytes, not its name), errors naming path.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	return decodeResult(path, b)
}

// decodeResult decodes the bytes of the result file path.
func decodeResult(path string, b []byte) (*Result, error) {
	if IsGzip(b) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("decompress result %s: %w", path, err)
		}
		// Read to the end, so that the stream's checksum and length
		// are checked, not only as much as the JSON decoder needs.
		if b, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("decompress result %s: %w", path, err)
		}
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
