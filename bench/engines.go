package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Engine KV-cache counters (vLLM names; the simulator exports the same):
// prefix-cache lookups and hits, in tokens, and preemptions.
const (
	metricPrefixQueries = "vllm:prefix_cache_queries_total"
	metricPrefixHits    = "vllm:prefix_cache_hits_total"
	metricPreemptions   = "vllm:num_preemptions_total"
)

// CacheCounters are an engine's KV-cache counters at one moment.
type CacheCounters struct {
	// Queries is the number of prompt tokens looked up.
	Queries float64 `json:"queries"`
	// Hits is the number of those found cached.
	Hits float64 `json:"hits"`
	// Preemptions is the number of sequences the engine preempted for
	// want of KV memory (each computed again later).
	Preemptions float64 `json:"preemptions"`
}

// Add returns c plus o.
func (c CacheCounters) Add(o CacheCounters) CacheCounters {
	return CacheCounters{Queries: c.Queries + o.Queries, Hits: c.Hits + o.Hits, Preemptions: c.Preemptions + o.Preemptions}
}

// Sub returns c minus o.
func (c CacheCounters) Sub(o CacheCounters) CacheCounters {
	return CacheCounters{Queries: c.Queries - o.Queries, Hits: c.Hits - o.Hits, Preemptions: c.Preemptions - o.Preemptions}
}

// ParseCacheCounters reads the KV-cache counters from a Prometheus text
// page, summing every series (engine, rank) of each.
func ParseCacheCounters(r io.Reader) (CacheCounters, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(r, 16<<20))
	if err != nil {
		return CacheCounters{}, fmt.Errorf("parse metrics page: %w", err)
	}
	return CacheCounters{Queries: sumFamily(fams, metricPrefixQueries), Hits: sumFamily(fams, metricPrefixHits),
		Preemptions: sumFamily(fams, metricPreemptions)}, nil
}

func sumFamily(fams map[string]*dto.MetricFamily, name string) float64 {
	f, ok := fams[name]
	if !ok {
		// The parser may key a counter by its name without _total.
		if f, ok = fams[name[:len(name)-len("_total")]]; !ok {
			return 0
		}
	}
	var sum float64
	for _, m := range f.GetMetric() {
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// scrapeCounters fetches and sums the counters of every page.
func scrapeCounters(ctx context.Context, hc *http.Client, urls []string) (CacheCounters, error) {
	var total CacheCounters
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return total, fmt.Errorf("scrape %s: %w", u, err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return total, fmt.Errorf("scrape %s: %w", u, err)
		}
		c, err := ParseCacheCounters(resp.Body)
		resp.Body.Close()
		if err != nil {
			return total, fmt.Errorf("scrape %s: %w", u, err)
		}
		total = total.Add(c)
	}
	return total, nil
}
