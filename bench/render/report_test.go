package render

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// fakeResult is a result with n measured requests of TTFT base, base+1ms, ...
func fakeResult(label string, run bench.RunInfo, hit float64, base time.Duration, n int) *bench.Result {
	r := &bench.Result{Config: bench.DefaultConfig(), Workload: bench.DefaultWorkload(bench.W1), Run: run}
	r.Config.Label = label
	r.Config.Replicas = 4
	for i := range n {
		r.Records = append(r.Records, bench.Record{Session: i, Status: 200, TTFT: base + time.Duration(i)*time.Millisecond, E2E: time.Second,
			CompletionTokens: 4, TPOT: 10 * time.Millisecond, PromptTokens: 100, CachedTokens: int(hit * 100), CachedReported: true, Replica: "r"})
	}
	r.Summary = bench.Summarize(r.Records, r.Config.SLO)
	r.Bounds = &bench.Bounds{Replicas: 4, CacheBlocks: 100, BlockSize: 16, HInf: 0.9, HPoolLRU: 0.8, HPoolBelady: 0.85, HOracle: 0.7}
	return r
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	results := []*bench.Result{
		fakeResult("round_robin", bench.RunInfo{Kind: bench.KindPolicy, Policy: "round_robin", Balancers: 1, Load: 1}, 0.2, 200*time.Millisecond, 50),
		fakeResult("cost_model", bench.RunInfo{Kind: bench.KindPolicy, Policy: "cost_model", Balancers: 1, Load: 1}, 0.6, 20*time.Millisecond, 50),
		fakeResult("cost_model@2x", bench.RunInfo{Kind: bench.KindLoad, Policy: "cost_model", Balancers: 1, Load: 2}, 0.6, 40*time.Millisecond, 50),
		fakeResult("cost_model-2b", bench.RunInfo{Kind: bench.KindBalancers, Policy: "cost_model", Balancers: 2, Load: 1}, 0.5, 20*time.Millisecond, 50),
	}
	if err := Write(dir, results, "inferrail bench compare"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ChartTTFTCDF, ChartHitRate, ChartP99VsLoad, ChartHitBalancers} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("chart %s: %v", name, err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("chart %s is not a PNG: %v", name, err)
		}
		if got := img.Bounds().Size(); got.X != chartW || got.Y != chartH {
			t.Errorf("chart %s is %v", name, got)
		}
		// Something beyond the white background and black axes is drawn:
		// a series colour.
		found := false
		for y := marginT; y < marginT+plotH && !found; y++ {
			for x := marginL + 2; x < marginL+plotW && !found; x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				found = (r>>8 == uint32(palette[0].R) && g>>8 == uint32(palette[0].G) && b>>8 == uint32(palette[0].B))
			}
		}
		if !found {
			t.Errorf("chart %s has no series drawn in the first colour", name)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| round_robin |", "| cost_model |", "| cost_model@2x |", "H_pool LRU | 0.800", "![ttft-cdf](ttft-cdf.png)", "Reproduce: `inferrail bench compare`",
		"| 0.600 |", "75%"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// A run whose every stream the drain cut has no usage, so no hit rate from
// usage: the report says "-", not 0.000 and 0% of the bounds (the ladder at
// 1.5x showed cost_model's hit rate as 0.000 beside an engine hit rate of
// 0.616).
func TestReportRunWithoutUsage(t *testing.T) {
	dir := t.TempDir()
	cut := fakeResult("cost_model@1.5x", bench.RunInfo{Kind: bench.KindLoad, Policy: "cost_model", Balancers: 1, Load: 1.5}, 0.6, 40*time.Millisecond, 50)
	for i := range cut.Records {
		r := &cut.Records[i]
		r.Cut, r.PromptTokens, r.CachedTokens, r.CachedReported = true, 0, 0, false
	}
	cut.Summary = bench.Summarize(cut.Records, cut.Config.SLO)
	cut.Summary.HitRateEngine = 0.616
	results := []*bench.Result{
		fakeResult("cost_model", bench.RunInfo{Kind: bench.KindPolicy, Policy: "cost_model", Balancers: 1, Load: 1}, 0.6, 20*time.Millisecond, 50),
		cut,
	}
	if err := Write(dir, results, ""); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.SplitSeq(string(md), "\n") {
		if strings.HasPrefix(line, "| cost_model@1.5x | 50 |") {
			row = line
		}
	}
	if !strings.Contains(row, "| - | 0.616 | - | - | - |") {
		t.Errorf("row of a run without usage = %q, want its hit rate and bound shares as -", row)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		first  float64
		step   float64
	}{{0, 1, 0, 0.2}, {0, 2600, 0, 500}, {0.5, 3.2, 0.5, 0.5}} {
		ts := niceTicks(tt.lo, tt.hi, tickCount)
		if len(ts) < 3 || ts[0] != tt.first || ts[1]-ts[0] != tt.step || ts[len(ts)-1] > tt.hi+1e-9 {
			t.Errorf("niceTicks(%v, %v) = %v", tt.lo, tt.hi, ts)
		}
	}
}
