package tokenize

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/tokenize/hf"
)

// loadHF loads tokenizer.json (and its configs) from a model directory. The
// special tokens added to completions are the ones transformers adds, as vLLM
// uses transformers to load tokenizers (hf.Config.Transformers).
// cacheBytes bounds the tokenizer's cache of segment ids (the text between
// special tokens, such as a shared system prompt): 0 means the default, a
// negative value turns it off.
func loadHF(dir string, cacheBytes int64) (Encoder, error) {
	t, err := hf.LoadWithConfig(dir, hf.Config{SegmentCacheBytes: cacheBytes, Transformers: true})
	if err != nil {
		return nil, err
	}
	return t, nil
}

var _ Encoder = (*hf.Tokenizer)(nil)

// cacheStatser is implemented by encoders with caches (hf.Tokenizer).
type cacheStatser interface {
	CacheStats() hf.CacheStats
}

// registerCacheMetrics exports the encoder's cache counters, labelled with
// the model, if it has caches and reg is set.
func registerCacheMetrics(reg prometheus.Registerer, model string, enc Encoder) error {
	cs, ok := enc.(cacheStatser)
	if reg == nil || !ok {
		return nil
	}
	type stat struct {
		name, help, cache string
		counter           bool
		get               func(hf.CacheStats) float64
	}
	stats := []stat{
		{"inferrail_tokenize_cache_hits_total", "Lookups found in a tokenizer cache.", "segment", true, func(s hf.CacheStats) float64 { return float64(s.SegmentHits) }},
		{"inferrail_tokenize_cache_misses_total", "Lookups not found in a tokenizer cache.", "segment", true, func(s hf.CacheStats) float64 { return float64(s.SegmentMisses) }},
		{"inferrail_tokenize_cache_entries", "Entries held by a tokenizer cache.", "segment", false, func(s hf.CacheStats) float64 { return float64(s.SegmentEntries) }},
		{"inferrail_tokenize_cache_bytes", "Approximate bytes held by a tokenizer cache.", "segment", false, func(s hf.CacheStats) float64 { return float64(s.SegmentBytes) }},
		{"inferrail_tokenize_cache_hits_total", "Lookups found in a tokenizer cache.", "word", true, func(s hf.CacheStats) float64 { return float64(s.WordHits) }},
		{"inferrail_tokenize_cache_misses_total", "Lookups not found in a tokenizer cache.", "word", true, func(s hf.CacheStats) float64 { return float64(s.WordMisses) }},
		{"inferrail_tokenize_cache_entries", "Entries held by a tokenizer cache.", "word", false, func(s hf.CacheStats) float64 { return float64(s.WordEntries) }},
		{"inferrail_tokenize_cache_bytes", "Approximate bytes held by a tokenizer cache.", "word", false, func(s hf.CacheStats) float64 { return float64(s.WordBytes) }},
	}
	for _, s := range stats {
		labels := prometheus.Labels{"model": model, "cache": s.cache}
		f := func() float64 { return s.get(cs.CacheStats()) }
		var c prometheus.Collector
		if s.counter {
			c = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: s.name, Help: s.help, ConstLabels: labels}, f)
		} else {
			c = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: s.name, Help: s.help, ConstLabels: labels}, f)
		}
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
