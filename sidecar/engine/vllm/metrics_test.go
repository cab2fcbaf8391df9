package vllm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferrail/inferrail/sidecar/engine"
)

func TestParseMetricsVersions(t *testing.T) {
	for _, tc := range []struct {
		file string
		want engine.Load
	}{
		{"v0.25.txt", engine.Load{Kind: engine.KindVLLM, Engines: 1, Running: 7, Waiting: 2, KVUsage: 0.4123,
			PromptTokensTotal: 61556, GenerationTokensTotal: 40960, PrefixQueries: 183412, PrefixHits: 121856,
			NumGPUBlocks: 29852, BlockSize: 16}},
		// v0.9.2–v0.10.x export old and new names: the new ones are used, never both.
		{"v0.10.txt", engine.Load{Kind: engine.KindVLLM, Engines: 1, Running: 3, Waiting: 1, KVUsage: 0.25,
			PromptTokensTotal: 1200, GenerationTokensTotal: 800, PrefixQueries: 1000, PrefixHits: 400,
			NumGPUBlocks: 10000, BlockSize: 32}},
		// Before the rename only gpu_cache_usage_perc and gpu_prefix_cache_* exist.
		{"v0.9.0.txt", engine.Load{Kind: engine.KindVLLM, Engines: 1, Running: 2, KVUsage: 0.5,
			PrefixQueries: 64, PrefixHits: 32}},
		// Two data-parallel engines: counts summed, usage weighted by blocks.
		{"dp2.txt", engine.Load{Kind: engine.KindVLLM, Engines: 2, Running: 10, Waiting: 3, KVUsage: 0.65,
			PrefixQueries: 400, PrefixHits: 40, Preemptions: 2, NumGPUBlocks: 4000, BlockSize: 16}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := engine.ParseLoad(f, 0, Names)
			if err != nil {
				t.Fatalf("ParseMetrics: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("ParseMetrics mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostilePagesAreUnreadable(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "v0.25.txt"))
	if err != nil {
		t.Fatal(err)
	}
	drop := func(family string) string {
		var out []string
		for _, l := range strings.Split(string(good), "\n") {
			if !strings.Contains(l, family+" ") && !strings.HasPrefix(l, family+"{") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	for _, tc := range []struct {
		name        string
		page        string
		max         int64
		wantMissing []string
		wantTooBig  bool
	}{
		{name: "empty page", page: "", wantMissing: []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}},
		{name: "no running family", page: drop("vllm:num_requests_running"), wantMissing: []string{"vllm:num_requests_running"}},
		{name: "no kv usage under any name", page: drop("vllm:kv_cache_usage_perc"), wantMissing: []string{"vllm:kv_cache_usage_perc"}},
		{name: "type line without samples", page: "# TYPE vllm:num_requests_running gauge\n" + drop("vllm:num_requests_running"),
			wantMissing: []string{"vllm:num_requests_running"}},
		{name: "an sglang page", page: "sglang:num_running_reqs 1\nsglang:num_queue_reqs 0\nsglang:token_usage 0.1\n",
			wantMissing: []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}},
		{name: "garbage", page: "<html>502 Bad Gateway</html>"},
		{name: "duplicate family", page: string(good) + "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"},
		{name: "NaN running", page: strings.Replace(string(good), "} 7.0", "} NaN", 1)},
		{name: "Inf usage", page: strings.Replace(string(good), "} 0.4123", "} +Inf", 1)},
		{name: "too large", page: string(good), max: int64(len(good)) - 1, wantTooBig: true},
		{name: "unterminated label", page: `vllm:num_requests_running{engine="0 7`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := engine.ParseLoad(strings.NewReader(tc.page), tc.max, Names)
			if err == nil {
				t.Fatalf("ParseMetrics = %+v, want an error", l)
			}
			if !errors.Is(err, engine.ErrUnreadable) {
				t.Errorf("error %v does not wrap ErrUnreadable", err)
			}
			if tc.wantTooBig != errors.Is(err, engine.ErrPageTooLarge) {
				t.Errorf("error %v: too-large = %v, want %v", err, !tc.wantTooBig, tc.wantTooBig)
			}
			var mf *engine.MissingFamilyError
			if tc.wantMissing != nil {
				if !errors.As(err, &mf) {
					t.Fatalf("error %v is not a MissingFamilyError", err)
				}
				if diff := cmp.Diff(tc.wantMissing, mf.Families); diff != "" {
					t.Errorf("missing families (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestPageExactlyAtLimitIsRead(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "v0.25.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.ParseLoad(strings.NewReader(string(good)), int64(len(good)), Names); err != nil {
		t.Fatalf("ParseMetrics at the limit: %v", err)
	}
}

func TestKVUsageIsClamped(t *testing.T) {
	page := "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 1.7\n"
	l, err := engine.ParseLoad(strings.NewReader(page), 0, Names)
	if err != nil {
		t.Fatal(err)
	}
	if l.KVUsage != 1 || l.Engines != 1 {
		t.Errorf("KVUsage %v Engines %d, want 1 1", l.KVUsage, l.Engines)
	}
}

func FuzzParseMetrics(f *testing.F) {
	for _, name := range []string{"v0.25.txt", "v0.10.txt", "v0.9.0.txt", "dp2.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := engine.ParseLoad(strings.NewReader(string(b)), 1<<16, Names)
		if err != nil {
			if !errors.Is(err, engine.ErrUnreadable) {
				t.Fatalf("error %v does not wrap ErrUnreadable", err)
			}
			return
		}
		if l.KVUsage < 0 || l.KVUsage > 1 || l.Engines < 1 {
			t.Fatalf("implausible load %+v", l)
		}
	})
}
