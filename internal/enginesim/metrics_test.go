package enginesim

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// coreFamily is what a scraper sees of a metric coreFamily.
type coreFamily struct {
	Type    string
	Labels  []string  // sorted label names
	Buckets []float64 // histogram upper bounds (without +Inf)
}

var (
	coreTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	coreITLBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	coreReqBuckets  = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	coreIterBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	coreBaseLabels  = []string{"engine", "model_name"}
)

// coreVLLMFamilies is docs/engines.md#vllm-metrics (names as exposed, types, labels, buckets)
// for the families the simulator models; max_model_len is 1000 here.
var coreVLLMFamilies = map[string]coreFamily{
	"vllm:num_requests_running":                  {Type: "GAUGE", Labels: coreBaseLabels},
	"vllm:num_requests_waiting":                  {Type: "GAUGE", Labels: coreBaseLabels},
	"vllm:num_requests_waiting_by_reason":        {Type: "GAUGE", Labels: []string{"engine", "model_name", "reason"}},
	"vllm:kv_cache_usage_perc":                   {Type: "GAUGE", Labels: coreBaseLabels},
	"vllm:prefix_cache_queries_total":            {Type: "COUNTER", Labels: coreBaseLabels},
	"vllm:prefix_cache_hits_total":               {Type: "COUNTER", Labels: coreBaseLabels},
	"vllm:num_preemptions_total":                 {Type: "COUNTER", Labels: coreBaseLabels},
	"vllm:prompt_tokens_total":                   {Type: "COUNTER", Labels: coreBaseLabels},
	"vllm:prompt_tokens_by_source_total":         {Type: "COUNTER", Labels: []string{"engine", "model_name", "source"}},
	"vllm:prompt_tokens_cached_total":            {Type: "COUNTER", Labels: coreBaseLabels},
	"vllm:generation_tokens_total":               {Type: "COUNTER", Labels: coreBaseLabels},
	"vllm:request_success_total":                 {Type: "COUNTER", Labels: []string{"engine", "finished_reason", "model_name"}},
	"vllm:time_to_first_token_seconds":           {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: coreTTFTBuckets},
	"vllm:inter_token_latency_seconds":           {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: coreITLBuckets},
	"vllm:request_time_per_output_token_seconds": {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: coreITLBuckets},
	"vllm:e2e_request_latency_seconds":           {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: coreReqBuckets},
	"vllm:request_queue_time_seconds":            {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: coreReqBuckets},
	"vllm:request_inference_time_seconds":        {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: coreReqBuckets},
	"vllm:request_prefill_time_seconds":          {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: coreReqBuckets},
	"vllm:request_decode_time_seconds":           {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: coreReqBuckets},
	"vllm:request_prompt_tokens":                 {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}},
	"vllm:request_generation_tokens":             {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}},
	"vllm:iteration_tokens_total":                {Type: "HISTOGRAM", Labels: coreBaseLabels, Buckets: coreIterBuckets},
	"vllm:cache_config_info": {Type: "GAUGE", Labels: []string{"block_size", "cache_dtype", "enable_prefix_caching", "engine",
		"gpu_memory_utilization", "num_cpu_blocks", "num_gpu_blocks", "prefix_caching_hash_algo"}},
}

var (
	coreSGLSched = []string{"dp_rank", "engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank"}
	coreSGLTok   = []string{"engine_type", "model_name"}
)

// coreSGLangFamilies is docs/engines.md#sglang-metrics for the modelled families, with SGLang's
// default buckets.
var coreSGLangFamilies = map[string]coreFamily{
	"sglang:num_running_reqs":            {Type: "GAUGE", Labels: coreSGLSched},
	"sglang:num_queue_reqs":              {Type: "GAUGE", Labels: coreSGLSched},
	"sglang:token_usage":                 {Type: "GAUGE", Labels: coreSGLSched},
	"sglang:cache_hit_rate":              {Type: "GAUGE", Labels: coreSGLSched},
	"sglang:num_used_tokens":             {Type: "GAUGE", Labels: coreSGLSched},
	"sglang:max_total_num_tokens":        {Type: "GAUGE", Labels: coreSGLSched},
	"sglang:page_size":                   {Type: "GAUGE", Labels: coreSGLSched},
	"sglang:prompt_tokens_total":         {Type: "COUNTER", Labels: coreSGLTok},
	"sglang:generation_tokens_total":     {Type: "COUNTER", Labels: coreSGLTok},
	"sglang:cached_tokens_total":         {Type: "COUNTER", Labels: []string{"cache_source", "engine_type", "model_name"}},
	"sglang:num_requests_total":          {Type: "COUNTER", Labels: coreSGLTok},
	"sglang:num_aborted_requests_total":  {Type: "COUNTER", Labels: coreSGLTok},
	"sglang:time_to_first_token_seconds": {Type: "HISTOGRAM", Labels: coreSGLTok, Buckets: []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}},
	"sglang:inter_token_latency_seconds": {Type: "HISTOGRAM", Labels: coreSGLTok, Buckets: []float64{0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8}},
	"sglang:e2e_request_latency_seconds": {Type: "HISTOGRAM", Labels: coreSGLTok, Buckets: []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}},
}

// coreGatherFamilies runs traffic through two engines (ranks 0 and 1) sharing
// one Metrics and returns what the registry exposes.
func coreGatherFamilies(t *testing.T, flavor string) (map[string]coreFamily, []*dto.MetricFamily) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, flavor, "meta-llama/Llama-3.1-8B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	for rank := range 2 {
		cfg := coreTestConfig()
		cfg.Rank = rank
		cfg.MaxModelLen = 1000
		e := coreMustEngine(t, cfg, m, nil)
		var sts []*Stream
		for i := range 3 {
			st, err := e.Submit(&Request{Prompt: coreTokens(1, 40+i), MaxTokens: 5, Generate: coreGen(1)})
			if err != nil {
				t.Fatal(err)
			}
			sts = append(sts, st)
		}
		sts[2].Abort("abort")
		for coreStep(e) {
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]coreFamily{}
	for _, mf := range mfs {
		f := coreFamily{Type: mf.GetType().String()}
		for _, mt := range mf.GetMetric() {
			var names []string
			for _, lp := range mt.GetLabel() {
				names = append(names, lp.GetName())
			}
			slices.Sort(names)
			if f.Labels != nil && !slices.Equal(f.Labels, names) {
				t.Errorf("%s: inconsistent labels %v vs %v", mf.GetName(), f.Labels, names)
			}
			f.Labels = names
			if h := mt.GetHistogram(); h != nil {
				var b []float64
				for _, bk := range h.GetBucket() {
					b = append(b, bk.GetUpperBound())
				}
				f.Buckets = b
			}
		}
		got[mf.GetName()] = f
	}
	return got, mfs
}

func TestMetricFamiliesMatchEngines(t *testing.T) {
	tests := []struct {
		flavor string
		want   map[string]coreFamily
	}{
		{FlavorVLLM, coreVLLMFamilies},
		{FlavorSGLang, coreSGLangFamilies},
	}
	for _, tt := range tests {
		t.Run(tt.flavor, func(t *testing.T) {
			got, _ := coreGatherFamilies(t, tt.flavor)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("families mismatch (-docs/engines.md +registry):\n%s", diff)
			}
		})
	}
}

func TestMetricValues(t *testing.T) {
	_, mfs := coreGatherFamilies(t, FlavorVLLM)
	values := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			key := mf.GetName()
			for _, lp := range mt.GetLabel() {
				if lp.GetName() != "model_name" {
					key += "," + lp.GetName() + "=" + lp.GetValue()
				}
			}
			switch {
			case mt.Counter != nil:
				values[key] = mt.Counter.GetValue()
			case mt.Gauge != nil:
				values[key] = mt.Gauge.GetValue()
			case mt.Histogram != nil:
				values[key] = float64(mt.Histogram.GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"vllm:request_success_total,engine=0,finished_reason=length": 2,
		"vllm:request_success_total,engine=0,finished_reason=abort":  1,
		"vllm:request_success_total,engine=1,finished_reason=stop":   0,
		"vllm:generation_tokens_total,engine=1":                      10,
		"vllm:prompt_tokens_total,engine=0":                          81,
		// The second request hits the first one's 2 full blocks (40 tokens, block 16).
		"vllm:prefix_cache_queries_total,engine=0":  81,
		"vllm:prefix_cache_hits_total,engine=0":     32,
		"vllm:time_to_first_token_seconds,engine=1": 2,
		"vllm:inter_token_latency_seconds,engine=1": 8,
		"vllm:num_requests_running,engine=0":        0,
		"vllm:kv_cache_usage_perc,engine=1":         0,
		"vllm:e2e_request_latency_seconds,engine=0": 3,
		"vllm:cache_config_info,block_size=16,cache_dtype=auto,enable_prefix_caching=True,engine=1,gpu_memory_utilization=0.9,num_cpu_blocks=None,num_gpu_blocks=27500,prefix_caching_hash_algo=sha256": 1,
	}
	for k, w := range want {
		if g, ok := values[k]; !ok || g != w {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
		}
	}
}

func TestNewMetricsErrors(t *testing.T) {
	if _, err := NewMetrics(prometheus.NewRegistry(), "tgi", "m"); err == nil {
		t.Error("NewMetrics(flavor tgi) = nil error")
	}
	if _, err := NewMetrics(nil, FlavorVLLM, "m"); err == nil {
		t.Error("NewMetrics(nil registerer) = nil error")
	}
	// Two Metrics on one registry share the collectors instead of failing.
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := NewMetrics(reg, FlavorVLLM, "m"); err != nil {
			t.Fatalf("second NewMetrics on one registry: %v", err)
		}
	}
}

func TestBuckets125(t *testing.T) {
	if diff := cmp.Diff([]float64{1, 2, 5, 10, 20, 50, 100}, buckets125(100)); diff != "" {
		t.Error(diff)
	}
	if got := buckets125(131072); got[len(got)-1] != 100000 {
		t.Errorf("buckets125(131072) ends at %v", got[len(got)-1])
	}
}

func TestSGLangMetricValues(t *testing.T) {
	_, mfs := coreGatherFamilies(t, FlavorSGLang)
	values := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			key := mf.GetName()
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "dp_rank" || lp.GetName() == "cache_source" {
					key += "," + lp.GetName() + "=" + lp.GetValue()
				}
			}
			switch {
			case mt.Counter != nil:
				values[key] = mt.Counter.GetValue()
			case mt.Gauge != nil:
				values[key] = mt.Gauge.GetValue()
			case mt.Histogram != nil:
				values[key] = float64(mt.Histogram.GetSampleCount())
			}
		}
	}
	// Two ranks, each: two requests of 40 and 41 prompt tokens × 5 tokens, one aborted before it ran.
	want := map[string]float64{
		"sglang:num_requests_total":                      6,
		"sglang:num_aborted_requests_total":              2,
		"sglang:prompt_tokens_total":                     2 * (40 + 41 + 42),
		"sglang:generation_tokens_total":                 20,
		"sglang:cached_tokens_total,cache_source=device": 64,
		"sglang:time_to_first_token_seconds":             4,
		"sglang:max_total_num_tokens,dp_rank=1":          27499 * 16,
		"sglang:page_size,dp_rank=0":                     16,
		"sglang:num_running_reqs,dp_rank=1":              0,
		"sglang:cache_hit_rate,dp_rank=0":                32.0 / 81,
	}
	for k, w := range want {
		if g, ok := values[k]; !ok || g != w {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
		}
	}
}
