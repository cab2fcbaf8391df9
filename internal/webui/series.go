package webui

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Totals are a node's cumulative counts at one instant; Series turns the
// difference between two of them into a Point.
type Totals struct {
	// Requests counts the requests handled.
	Requests float64
	// PromptTokens and CachedTokens count the prompt tokens and the part
	// of them found (or predicted) in a prefix cache; both 0 when the node
	// has no such counts.
	PromptTokens, CachedTokens float64
	// TTFT is the time-to-first-token histogram (nil: none).
	TTFT *Histogram
}

// Histogram is a cumulative histogram: Counts[i] observations were at most
// Bounds[i] seconds (ascending; the last bound may be +Inf).
type Histogram struct {
	Bounds []float64
	Counts []float64
	Count  float64
	Sum    float64
}

// Point is one interval of a Series.
type Point struct {
	// Time is the interval's end.
	Time time.Time `json:"time"`
	// RequestsPerSecond is the request rate over the interval.
	RequestsPerSecond float64 `json:"requests_per_second"`
	// HitRatio is cached / prompt tokens over the interval (nil: no tokens).
	HitRatio *float64 `json:"hit_ratio"`
	// TTFTP50MS and TTFTP95MS are the interval's TTFT quantiles, estimated
	// from the histogram's buckets as Prometheus' histogram_quantile does
	// (nil: no first token in the interval).
	TTFTP50MS *float64 `json:"ttft_p50_ms"`
	TTFTP95MS *float64 `json:"ttft_p95_ms"`
}

// Series keeps the last Points of a node, one per Step: the one owner of
// the UI's history. Run samples; Points reads, concurrently.
type Series struct {
	read func() Totals
	step time.Duration
	size int

	mu     sync.Mutex // protects the fields below
	points []Point    // ring, oldest at next once full
	next   int
}

// NewSeries returns a Series of size points, one every step, each from the
// difference of two calls of read.
func NewSeries(read func() Totals, step time.Duration, size int) *Series {
	return &Series{read: read, step: step, size: max(size, 1)}
}

// Run samples every step until ctx ends.
func (s *Series) Run(ctx context.Context) error {
	t := time.NewTicker(s.step)
	defer t.Stop()
	prev, prevAt := s.read(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			cur := s.read()
			s.add(interval(prev, cur, prevAt, now))
			prev, prevAt = cur, now
		}
	}
}

func (s *Series) add(p Point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.points) < s.size {
		s.points = append(s.points, p)
	} else {
		s.points[s.next] = p
	}
	s.next = (s.next + 1) % s.size
}

// Points returns the kept points, oldest first.
func (s *Series) Points() []Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Point, 0, len(s.points))
	start := 0
	if len(s.points) == s.size {
		start = s.next
	}
	for k := range s.points {
		out = append(out, s.points[(start+k)%len(s.points)])
	}
	return out
}

// interval returns the Point between two Totals read at a and b.
func interval(prev, cur Totals, a, b time.Time) Point {
	p := Point{Time: b}
	if secs := b.Sub(a).Seconds(); secs > 0 {
		p.RequestsPerSecond = max(cur.Requests-prev.Requests, 0) / secs
	}
	if dp := cur.PromptTokens - prev.PromptTokens; dp > 0 {
		r := min(max((cur.CachedTokens-prev.CachedTokens)/dp, 0), 1)
		p.HitRatio = &r
	}
	if cur.TTFT != nil && prev.TTFT != nil && len(cur.TTFT.Bounds) == len(prev.TTFT.Bounds) {
		d := make([]float64, len(cur.TTFT.Counts))
		for i := range d {
			d[i] = cur.TTFT.Counts[i] - prev.TTFT.Counts[i]
		}
		p.TTFTP50MS = quantileMS(0.5, cur.TTFT.Bounds, d)
		p.TTFTP95MS = quantileMS(0.95, cur.TTFT.Bounds, d)
	} else if cur.TTFT != nil && prev.TTFT == nil {
		p.TTFTP50MS = quantileMS(0.5, cur.TTFT.Bounds, cur.TTFT.Counts)
		p.TTFTP95MS = quantileMS(0.95, cur.TTFT.Bounds, cur.TTFT.Counts)
	}
	return p
}

// quantileMS returns quantile q of cumulative bucket counts, in ms, by
// linear interpolation within the bucket (the highest finite bound when it
// falls in the +Inf bucket); nil when there is no observation.
func quantileMS(q float64, bounds, counts []float64) *float64 {
	if len(counts) == 0 || counts[len(counts)-1] <= 0 {
		return nil
	}
	total := counts[len(counts)-1]
	rank := q * total
	i := sort.Search(len(counts), func(i int) bool { return counts[i] >= rank })
	if i >= len(bounds) {
		i = len(bounds) - 1
	}
	var v float64
	switch {
	case math.IsInf(bounds[i], 1):
		v = 0
		if i > 0 {
			v = bounds[i-1]
		}
	default:
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = bounds[i-1], counts[i-1]
		}
		in := counts[i] - below
		v = bounds[i]
		if in > 0 {
			v = lo + (bounds[i]-lo)*(rank-below)/in
		}
	}
	ms := v * 1e3
	return &ms
}

// GathererTotals reads Totals from g's families: requests sums the counter
// family of that name over its series, ttft merges the histogram family's
// series, and prompt and cached sum the families' samples (counters) or
// observed sums (histograms). An empty name is not read.
func GathererTotals(g prometheus.Gatherer, requests, ttft, prompt, cached string) func() Totals {
	return func() Totals {
		var t Totals
		if g == nil {
			return t
		}
		mfs, err := g.Gather()
		if err != nil && len(mfs) == 0 {
			return t
		}
		for _, mf := range mfs {
			switch mf.GetName() {
			case "":
			case requests:
				t.Requests = sum(mf)
			case prompt:
				t.PromptTokens = sum(mf)
			case cached:
				t.CachedTokens = sum(mf)
			case ttft:
				t.TTFT = merge(mf)
			}
		}
		return t
	}
}

// sum adds up a family's counter values or histogram sums.
func sum(mf *dto.MetricFamily) float64 {
	s := 0.0
	for _, m := range mf.GetMetric() {
		switch {
		case m.Counter != nil:
			s += m.Counter.GetValue()
		case m.Histogram != nil:
			s += m.Histogram.GetSampleSum()
		case m.Gauge != nil:
			s += m.Gauge.GetValue()
		}
	}
	return s
}

// merge adds up a histogram family's series (they share their buckets).
func merge(mf *dto.MetricFamily) *Histogram {
	var h *Histogram
	for _, m := range mf.GetMetric() {
		mh := m.GetHistogram()
		if mh == nil {
			continue
		}
		bs := mh.GetBucket()
		if h == nil {
			h = &Histogram{Bounds: make([]float64, 0, len(bs)+1), Counts: make([]float64, len(bs)+1)}
			for _, b := range bs {
				h.Bounds = append(h.Bounds, b.GetUpperBound())
			}
			h.Bounds = append(h.Bounds, math.Inf(1))
		}
		if len(bs)+1 != len(h.Bounds) {
			continue
		}
		for i, b := range bs {
			h.Counts[i] += float64(b.GetCumulativeCount())
		}
		h.Counts[len(bs)] += float64(mh.GetSampleCount())
		h.Count += float64(mh.GetSampleCount())
		h.Sum += mh.GetSampleSum()
	}
	return h
}
