package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCacheCounters(t *testing.T) {
	tests := []struct {
		name string
		page string
		want CacheCounters
	}{
		{"vllm", `# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 500
# HELP vllm:prefix_cache_hits_total Prefix cache hits.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 600
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 150
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 3
vllm:num_preemptions_total{engine="1",model_name="m"} 4
`, CacheCounters{Queries: 1500, Hits: 750, Preemptions: 7}},
		{"absent", "# TYPE other gauge\nother 1\n", CacheCounters{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCacheCounters(strings.NewReader(tt.page))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseCacheCounters mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ParseCacheCounters(strings.NewReader("not a { page")); err == nil {
		t.Error("a broken page parsed")
	}
}

func FuzzParseCacheCounters(f *testing.F) {
	f.Add([]byte("# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total 5\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseCacheCounters(strings.NewReader(string(b)))
	})
}
