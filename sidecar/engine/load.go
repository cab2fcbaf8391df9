package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// DefaultMaxPageBytes bounds a metrics page when the caller gives no limit. A
// vLLM page with a few engines is about 50–200 KB.
const DefaultMaxPageBytes = 4 << 20

// ErrUnreadable is wrapped by every error that means "this page does not tell
// the engine's load": a parse error, a page over the byte limit, a missing
// required family or a non-finite required value. A caller must treat the
// engine's load as unknown, never as idle.
var ErrUnreadable = errors.New("metrics page unreadable")

// ErrPageTooLarge is wrapped (with ErrUnreadable) when a page exceeds its byte
// limit.
var ErrPageTooLarge = errors.New("metrics page too large")

// MissingFamilyError reports required families absent from a page.
type MissingFamilyError struct {
	// Kind is the engine whose table was used.
	Kind Kind
	// Families lists the missing families (the first candidate name of each).
	Families []string
}

// Error implements error.
func (e *MissingFamilyError) Error() string {
	return fmt.Sprintf("%s metrics page lacks required families %s", e.Kind, strings.Join(e.Families, ", "))
}

// Unwrap makes errors.Is(err, ErrUnreadable) hold.
func (e *MissingFamilyError) Unwrap() error { return ErrUnreadable }

// Load is an engine's load and cache counters as read from one metrics page,
// summed over its data-parallel engines.
type Load struct {
	// Kind is the engine kind whose table read the page.
	Kind Kind
	// Engines is the number of data-parallel engines on the page (at least 1).
	Engines int
	// Running and Waiting are request counts.
	Running, Waiting float64
	// KVUsage is the KV-cache usage in [0,1], averaged over engines (weighted
	// by their block counts when known).
	KVUsage float64
	// PromptTokensTotal and GenerationTokensTotal are cumulative token counters.
	PromptTokensTotal, GenerationTokensTotal float64
	// PrefixQueries and PrefixHits are cumulative prefix-cache counters in
	// tokens (queried and served from cache).
	PrefixQueries, PrefixHits float64
	// Preemptions is the cumulative preemption counter (0 when not exported).
	Preemptions float64
	// NumGPUBlocks is the total number of KV blocks over the engines (0 when
	// unknown).
	NumGPUBlocks int
	// BlockSize is the engine's block size in tokens (0 when unknown).
	BlockSize int
}

// MetricNames is one engine's table of metric names. Each field lists
// candidate family names, newest first; the first one present on a page is
// used (old and new names are never added together).
type MetricNames struct {
	// Kind is the engine kind.
	Kind Kind
	// Prefix is the family-name prefix that identifies the engine ("vllm:").
	Prefix string
	// RankLabel is the label naming the data-parallel engine.
	RankLabel string
	// ReplicaLabels are labels whose non-"0" series repeat rank 0's values
	// (tensor / pipeline parallel replicas); such series are ignored.
	ReplicaLabels []string

	// Required families. KVUsage may be empty for an engine that exports no
	// usage gauge (llama.cpp): the page then leaves Load.KVUsage at 0 for the
	// adapter to fill from elsewhere.
	Running, Waiting, KVUsage []string
	// Optional counters.
	PromptTokens, GenerationTokens, PrefixQueries, PrefixHits, Preemptions []string
	// CacheInfo is an info-style gauge whose labels carry block_size and
	// num_gpu_blocks (vLLM).
	CacheInfo string
	// BlockSizeGauge is a gauge holding the block size (SGLang page size).
	BlockSizeGauge string
	// CapacityTokens is a gauge of the KV capacity in tokens; blocks = tokens
	// / block size (SGLang).
	CapacityTokens string
	// PromptTokensExcludeHits says the PromptTokens counter counts only the
	// prompt tokens computed, not those served from the cache (llama.cpp's
	// prompt_tokens_total): the load's PromptTokensTotal and PrefixQueries
	// are then that counter plus PrefixHits.
	PromptTokensExcludeHits bool
}

// Page is a parsed metrics page: families by name.
type Page map[string]*dto.MetricFamily

// ParsePage reads at most maxBytes (DefaultMaxPageBytes when <= 0) of a
// Prometheus text page and parses it.
// It parses every family; ParsePageFor parses only those a table reads.
func ParsePage(r io.Reader, maxBytes int64) (Page, error) {
	buf, err := readPage(r, maxBytes)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(buf))
	if err != nil {
		return nil, fmt.Errorf("parse metrics page: %w: %w", ErrUnreadable, err)
	}
	return Page(fams), nil
}

// readPage reads at most maxBytes (DefaultMaxPageBytes when <= 0).
func readPage(r io.Reader, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxPageBytes
	}
	buf, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read metrics page: %w: %w", ErrUnreadable, err)
	}
	if int64(len(buf)) > maxBytes {
		return nil, fmt.Errorf("%w: %w: more than %d bytes", ErrUnreadable, ErrPageTooLarge, maxBytes)
	}
	return buf, nil
}

// DetectKind reports which engine exported a page, by its family-name
// prefixes; ok is false when no table matches. When several match, the one
// whose running-requests family is present wins.
func DetectKind(p Page, tables ...MetricNames) (k Kind, ok bool) {
	var found []MetricNames
	for _, t := range tables {
		for name := range p {
			if strings.HasPrefix(name, t.Prefix) {
				found = append(found, t)
				break
			}
		}
	}
	for _, t := range found {
		if first(p, t.Running) != nil {
			return t.Kind, true
		}
	}
	if len(found) > 0 {
		return found[0].Kind, true
	}
	return "", false
}

// ParseLoad reads a page and extracts the load with table t, parsing only
// the families t reads (ParsePageFor).
func ParseLoad(r io.Reader, maxBytes int64, t MetricNames) (Load, error) {
	p, err := ParsePageFor(r, maxBytes, t)
	if err != nil {
		return Load{}, err
	}
	return ExtractLoad(p, t)
}

// ExtractLoad computes the load from a parsed page with table t.
func ExtractLoad(p Page, t MetricNames) (Load, error) {
	l := Load{Kind: t.Kind}
	running, waiting, usage := first(p, t.Running), first(p, t.Waiting), first(p, t.KVUsage)
	required := []struct {
		fam   *dto.MetricFamily
		names []string
	}{{running, t.Running}, {waiting, t.Waiting}}
	if len(t.KVUsage) > 0 {
		required = append(required, struct {
			fam   *dto.MetricFamily
			names []string
		}{usage, t.KVUsage})
	}
	var missing []string
	for _, f := range required {
		if f.fam == nil || len(t.byRank(f.fam)) == 0 {
			missing = append(missing, f.names[0])
		}
	}
	if len(missing) > 0 {
		return Load{}, &MissingFamilyError{Kind: t.Kind, Families: missing}
	}
	var ok bool
	if l.Running, ok = t.sum(running); !ok {
		return Load{}, fmt.Errorf("%w: %s has a non-finite value", ErrUnreadable, running.GetName())
	}
	if l.Waiting, ok = t.sum(waiting); !ok {
		return Load{}, fmt.Errorf("%w: %s has a non-finite value", ErrUnreadable, waiting.GetName())
	}
	l.Engines = len(t.byRank(running))

	// Block size and blocks per rank.
	blocks := map[string]float64{}
	if info := p[t.CacheInfo]; t.CacheInfo != "" && info != nil {
		for _, m := range info.GetMetric() {
			if t.isReplica(m) {
				continue
			}
			if bs, err := strconv.Atoi(label(m, "block_size")); err == nil && bs > 0 && bs <= 1<<20 {
				l.BlockSize = bs
			}
			if nb, err := strconv.Atoi(label(m, "num_gpu_blocks")); err == nil && nb > 0 && nb <= 1<<40 {
				blocks[label(m, t.RankLabel)] += float64(nb)
			}
		}
	}
	if g := p[t.BlockSizeGauge]; t.BlockSizeGauge != "" && g != nil {
		for _, v := range t.byRank(g) {
			if v >= 1 && v <= 1<<20 {
				l.BlockSize = int(v)
			}
		}
	}
	if c := p[t.CapacityTokens]; t.CapacityTokens != "" && c != nil && l.BlockSize > 0 {
		for r, v := range t.byRank(c) {
			if v >= 1 && v <= 1<<40 {
				blocks[r] = math.Floor(v / float64(l.BlockSize))
			}
		}
	}
	for _, b := range blocks {
		l.NumGPUBlocks += int(b)
	}

	// KV usage: mean over ranks, weighted by blocks when every rank has them.
	var per map[string]float64
	if usage != nil {
		per = t.byRank(usage)
	}
	var num, den float64
	weighted := len(blocks) > 0
	for r := range per {
		if blocks[r] <= 0 {
			weighted = false
		}
	}
	for r, u := range per {
		if math.IsNaN(u) || math.IsInf(u, 0) {
			return Load{}, fmt.Errorf("%w: %s has a non-finite value", ErrUnreadable, usage.GetName())
		}
		w := 1.0
		if weighted {
			w = blocks[r]
		}
		num += w * min(max(u, 0), 1)
		den += w
	}
	if den > 0 {
		l.KVUsage = num / den
	}

	l.PromptTokensTotal = t.optional(p, t.PromptTokens)
	l.GenerationTokensTotal = t.optional(p, t.GenerationTokens)
	l.PrefixQueries = t.optional(p, t.PrefixQueries)
	l.PrefixHits = t.optional(p, t.PrefixHits)
	l.Preemptions = t.optional(p, t.Preemptions)
	if t.PromptTokensExcludeHits {
		l.PromptTokensTotal += l.PrefixHits
		l.PrefixQueries = l.PromptTokensTotal
	}
	return l, nil
}

func first(p Page, names []string) *dto.MetricFamily {
	for _, n := range names {
		if f, ok := p[n]; ok {
			return f
		}
	}
	return nil
}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

func (t MetricNames) isReplica(m *dto.Metric) bool {
	for _, l := range t.ReplicaLabels {
		if v := label(m, l); v != "" && v != "0" {
			return true
		}
	}
	return false
}

// value returns a sample's value for gauges, counters and untyped samples.
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// byRank sums a family's samples per data-parallel rank, skipping replicas.
func (t MetricNames) byRank(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		if t.isReplica(m) {
			continue
		}
		v, ok := value(m)
		if !ok {
			continue
		}
		out[label(m, t.RankLabel)] += v
	}
	return out
}

// sum adds a family's samples; ok is false when the sum is not finite.
func (t MetricNames) sum(f *dto.MetricFamily) (float64, bool) {
	var s float64
	for _, v := range t.byRank(f) {
		s += v
	}
	return s, !math.IsNaN(s) && !math.IsInf(s, 0)
}

// optional sums the first present family of names, 0 when absent or not
// finite.
func (t MetricNames) optional(p Page, names []string) float64 {
	f := first(p, names)
	if f == nil {
		return 0
	}
	s, ok := t.sum(f)
	if !ok {
		return 0
	}
	return s
}
