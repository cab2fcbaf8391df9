package render

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// Chart file names written by Write.
const (
	ChartTTFTCDF      = "ttft-cdf.png"
	ChartHitRate      = "hit-rate.png"
	ChartP99VsLoad    = "p99-ttft-vs-load.png"
	ChartHitBalancers = "hit-rate-vs-balancers.png"
	ChartP99Replicas  = "p99-ttft-vs-replicas.png"
	ReportFile        = "report.md"
)

// Group is the repetitions of one labelled run.
type Group struct {
	Label string
	Run   bench.RunInfo
	Reps  []*bench.Result
}

// mean returns the mean of f over the repetitions.
func (g *Group) mean(f func(*bench.Result) float64) float64 {
	var s float64
	for _, r := range g.Reps {
		s += f(r)
	}
	return s / float64(len(g.Reps))
}

// spread returns min and max of f over the repetitions.
func (g *Group) spread(f func(*bench.Result) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range g.Reps {
		lo, hi = math.Min(lo, f(r)), math.Max(hi, f(r))
	}
	return lo, hi
}

// ttfts returns the measured requests' TTFTs of every repetition, sorted.
func (g *Group) ttfts() []time.Duration {
	var out []time.Duration
	for _, r := range g.Reps {
		for _, rec := range r.Records {
			if !rec.Warmup && rec.OK() {
				out = append(out, rec.TTFT)
			}
		}
	}
	slices.Sort(out)
	return out
}

// policyOrder ranks policies in tables and charts: cache-blind baselines
// first, then cache-aware policies, then external baselines.
var policyOrder = map[string]int{"round_robin": 1, "random": 2, "least_request": 3, "p2c": 4, "prefix_hash": 5,
	"kv_aware": 6, "cost_model": 7, "sglang_cache_aware": 8, "dynamo_kv": 9, "llm_d": 10, "nginx-round_robin": 11, "nginx-least_conn": 12}

var kindOrder = map[string]int{"": 0, bench.KindPolicy: 0, bench.KindBaseline: 0, bench.KindOracle: 0, bench.KindLoad: 1, bench.KindBalancers: 2, bench.KindReplicas: 3}

// GroupResults groups results by label, ordered by run kind, policy (known
// policies in policyOrder, then by name), load, balancers and replicas.
func GroupResults(results []*bench.Result) []*Group {
	out := groupByLabel(results)
	rank := func(p string) int {
		if r, ok := policyOrder[p]; ok {
			return r
		}
		return len(policyOrder) + 1
	}
	slices.SortStableFunc(out, func(a, b *Group) int {
		return cmp.Or(cmp.Compare(kindOrder[a.Run.Kind], kindOrder[b.Run.Kind]),
			cmp.Compare(rank(a.Run.Policy), rank(b.Run.Policy)), cmp.Compare(a.Run.Policy, b.Run.Policy),
			cmp.Compare(a.Run.Load, b.Run.Load), cmp.Compare(a.Run.Balancers, b.Run.Balancers), cmp.Compare(a.replicas(), b.replicas()), cmp.Compare(a.Label, b.Label))
	})
	return out
}

// Ordered returns results in report order (see GroupResults).
func Ordered(results []*bench.Result) []*bench.Result {
	var out []*bench.Result
	for _, g := range GroupResults(results) {
		out = append(out, g.Reps...)
	}
	return out
}

func groupByLabel(results []*bench.Result) []*Group {
	var out []*Group
	idx := map[string]*Group{}
	for _, r := range results {
		g, ok := idx[r.Config.Label]
		if !ok {
			g = &Group{Label: r.Config.Label, Run: r.Run}
			idx[r.Config.Label] = g
			out = append(out, g)
		}
		g.Reps = append(g.Reps, r)
	}
	return out
}

// ReadDir reads every result in dir, plain (*.json) or gzip (*.json.gz),
// in the order of their names as plain files. A run present in both forms
// (X.json beside X.json.gz) is an error naming both, not a run counted
// twice.
func ReadDir(dir string) ([]*bench.Result, error) {
	paths, err := resultPaths(dir)
	if err != nil {
		return nil, err
	}
	var out []*bench.Result
	for _, p := range paths {
		r, err := bench.ReadResult(p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no results in %s", dir)
	}
	return out, nil
}

// resultPaths lists the result files of dir (*.json and *.json.gz), sorted
// by their names with .json.gz read as .json, so that compressing a part
// changes no order; an error when a run is there in both forms.
func resultPaths(dir string) ([]string, error) {
	plain, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	gz, err := filepath.Glob(filepath.Join(dir, "*"+bench.GzipSuffix))
	if err != nil {
		return nil, err
	}
	key := func(p string) string { return strings.TrimSuffix(p, ".gz") }
	seen := make(map[string]string, len(plain))
	for _, p := range plain {
		seen[p] = p
	}
	for _, p := range gz {
		if q, ok := seen[key(p)]; ok {
			return nil, fmt.Errorf("run %s is in %s and in %s: remove the stale one (a rerun writes .json.gz)",
				strings.TrimSuffix(filepath.Base(p), bench.GzipSuffix), q, p)
		}
	}
	paths := append(plain, gz...)
	slices.SortFunc(paths, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	return paths, nil
}

// Write renders the charts and report.md into dir. reproduce is the command
// line that regenerates the results (shown in the report). The goals table
// at the top is evaluated over these results alone (see WriteTree for
// several workloads).
func Write(dir string, results []*bench.Result, reproduce string) error {
	groups := GroupResults(results)
	var sets []Set
	if len(groups) > 0 {
		sets = []Set{{Workload: groups[0].Reps[0].Workload.Name, Groups: groups}}
	}
	return writeDir(dir, groups, page{reproduce: reproduce, goals: Evaluate(sets)})
}

// page is what a report shows besides its runs.
type page struct {
	reproduce string
	goals     []Goal
	// losses are the part's losing cells, shown after the goals.
	losses []Loss
	// goalsNote follows the goals table (e.g. a link to the other workloads).
	goalsNote string
}

func writeDir(dir string, groups []*Group, pg page) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report dir: %w", err)
	}
	charts := map[string]interface{ WritePNG(io.Writer) error }{}
	if c, ok := ttftCDF(groups); ok {
		charts[ChartTTFTCDF] = c
	}
	if c, ok := hitRate(groups); ok {
		charts[ChartHitRate] = c
	}
	if c, ok := p99VsLoad(groups); ok {
		charts[ChartP99VsLoad] = c
	}
	if c, ok := hitVsBalancers(groups); ok {
		charts[ChartHitBalancers] = c
	}
	if c, ok := p99VsReplicas(groups); ok {
		charts[ChartP99Replicas] = c
	}
	for name, c := range charts {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("write chart: %w", err)
		}
		err = c.WritePNG(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write chart %s: %w", name, err)
		}
	}
	f, err := os.Create(filepath.Join(dir, ReportFile))
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	err = markdown(f, groups, charts, pg)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func isBase(g *Group) bool {
	return g.Run.Kind == "" || g.Run.Kind == bench.KindPolicy || g.Run.Kind == bench.KindBaseline || g.Run.Kind == bench.KindOracle
}

func pct(v, of float64) string {
	if of <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*v/of)
}

// Markdown writes the report text: the goals evaluated over groups, then the
// runs, sweeps, bounds and charts.
func Markdown(w io.Writer, groups []*Group, charts map[string]interface{ WritePNG(io.Writer) error }, reproduce string) error {
	var sets []Set
	if len(groups) > 0 {
		sets = []Set{{Workload: groups[0].Reps[0].Workload.Name, Groups: groups}}
	}
	return markdown(w, groups, charts, page{reproduce: reproduce, goals: Evaluate(sets)})
}

func markdown(w io.Writer, groups []*Group, charts map[string]interface{ WritePNG(io.Writer) error }, pg page) error {
	var sb strings.Builder
	reproduce := pg.reproduce
	sb.WriteString("# inferrail benchmark report\n\n")
	if len(groups) == 0 {
		sb.WriteString("No results.\n")
		_, err := io.WriteString(w, sb.String())
		return err
	}
	first := groups[0].Reps[0]
	wl, cfg := first.Workload, first.Config
	fmt.Fprintf(&sb, "Workload **%s** (seed %d, %d repetition(s) with seeds %d…%d): rate %.2g sessions/s for %v, warm-up %v left out",
		wl.Name, wl.Seed, len(groups[0].Reps), wl.Seed, wl.Seed+uint64(len(groups[0].Reps))-1, wl.Rate, wl.Duration, cfg.Warmup)
	switch wl.Name {
	case bench.W1:
		fmt.Fprintf(&sb, "; %d system prompts of %d tokens, %d-token questions, %d output tokens", wl.Groups, wl.SystemTokens, wl.UserTokens, wl.OutputTokens)
	case bench.W2, bench.W3:
		fmt.Fprintf(&sb, "; %d turns, %d-token messages, %d output tokens, think %v", wl.Turns, wl.UserTokens, wl.OutputTokens, wl.Think)
	case bench.Ladder:
		fmt.Fprintf(&sb, "; %d shared prompts of %d tokens × %d questions of %d tokens, %d output tokens", wl.Groups, wl.SystemTokens, wl.PromptsPerGroup, wl.UserTokens, wl.OutputTokens)
	case bench.Mooncake:
		fmt.Fprintf(&sb, "; trace %s at %g×, prompts cut at %d tokens", wl.TracePath, wl.Speedup, wl.MaxInputTokens)
	}
	fmt.Fprintf(&sb, ".\nFleet: %d simulated replicas of %d blocks × %d tokens (every run starts cold). SLO for goodput: TTFT ≤ %v and TPOT ≤ %v.\n\n",
		cfg.Replicas, cfg.CacheBlocks, cfg.BlockSize, cfg.SLO.TTFT, cfg.SLO.TPOT)
	fmt.Fprintf(&sb, "Load: %s.\n\n", baseLoad(groups))
	if reproduce != "" {
		fmt.Fprintf(&sb, "Reproduce: `%s`\n\n", reproduce)
	}
	if len(pg.goals) > 0 {
		sb.WriteString("## Goals\n\nComputed from the results below (means over repetitions; p99 is TTFT p99).\n\n")
		goalsTable(&sb, pg.goals)
		if len(pg.losses) > 0 {
			sb.WriteString("\n### Losing cells\n\n")
			lossTable(&sb, pg.losses)
		}
		if pg.goalsNote != "" {
			sb.WriteString("\n" + pg.goalsNote + "\n")
		}
		loadContext(&sb, groups)
		sb.WriteString("\n")
	}
	capacitySection(&sb, groups)
	oracle := oracleRun(groups)
	sb.WriteString("## Policies and baselines\n\n")
	sb.WriteString("Latencies in ms, counted from each request's scheduled send time (open loop). Hit rate from `usage.prompt_tokens_details.cached_tokens`; " +
		"engine hit rate from the engines' `vllm:prefix_cache_{hits,queries}_total` after the warm-up; " +
		"`% H_pool` and `% H_inf` are the hit rate as a share of the bounds of the same request sequence; `% oracle` its share of the exact-state oracle run's " +
		"(same load and fleet size; - without one); `pred. exact` is the share of requests " +
		"whose predicted cached tokens (`x-inferrail-cached-tokens`) equal the engine's (n/a for policies that predict nothing: the cache-blind ones and prefix_hash). " +
		"Means over repetitions; TTFT p99 shows min–max across them.\n\n")
	sb.WriteString("| run | req | failed | TTFT p50 | TTFT p99 | TPOT p50 | ITL p99 | E2E p99 | out tok/s | goodput/s | good % | hit rate | engine hit | % H_pool | % H_inf | % oracle | pred. exact | send lag p99 | replica share min–max |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		if !isBase(g) {
			continue
		}
		writeRow(&sb, g, oracle)
	}
	var other []*Group
	for _, g := range groups {
		if !isBase(g) {
			other = append(other, g)
		}
	}
	if len(other) > 0 {
		sb.WriteString("\n## Load, balancer and replica sweeps\n\n")
		sb.WriteString("| run | req | failed | TTFT p50 | TTFT p99 | TPOT p50 | ITL p99 | E2E p99 | out tok/s | goodput/s | good % | hit rate | engine hit | % H_pool | % H_inf | % oracle | pred. exact | send lag p99 | replica share min–max |\n")
		sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range other {
			writeRow(&sb, g, oracle)
		}
	}
	sb.WriteString("\n† send lag p99 above 100 ms: the load generator itself stalled (other work on the machine) during this run, so its tail latencies " +
		"include the stall; compare such rows by their medians and hit rates.\n")
	if b := first.Bounds; b != nil {
		fmt.Fprintf(&sb, "\n## Bounds of the request sequence\n\n%d replicas × %d blocks of %d tokens (first run's sequence; every run with the same seed sends the same prompts for W1, W6 and traces):\n\n", b.Replicas, b.CacheBlocks, b.BlockSize)
		sb.WriteString("| bound | hit rate | meaning |\n|---|---|---|\n")
		fmt.Fprintf(&sb, "| H_inf | %.3f | infinite single cache: no routing and no memory can beat it |\n", b.HInf)
		fmt.Fprintf(&sb, "| H_pool LRU | %.3f | one LRU cache of the fleet's total capacity: a perfect global cache |\n", b.HPoolLRU)
		fmt.Fprintf(&sb, "| H_pool Belady | %.3f | the same with clairvoyant eviction: the capacity-limited ceiling |\n", b.HPoolBelady)
		fmt.Fprintf(&sb, "| offline replay | %.3f | an exact-state router over per-replica LRU caches that picks the lowest estimated TTFT (FIFO prefill queue + uncached prefill); a reference, not a bound, since it gives up hits to avoid queues (est. TTFT p50 %.0f ms, p99 %.0f ms, prefill only) |\n", b.HOracle, b.OracleTTFT.P50, b.OracleTTFT.P99)
		if oracle != nil {
			fmt.Fprintf(&sb, "| exact-state oracle run | %.3f | measured: %s on a fleet whose summaries and load reach the balancers with (nearly) no delay or false positives (run %s) |\n",
				oracle.hit(), oracle.Run.Policy, oracle.Label)
		}
	}
	replicasSection(&sb, groups)
	picksSection(&sb, groups)
	sb.WriteString("\n## Charts\n\n")
	for _, name := range []string{ChartTTFTCDF, ChartHitRate, ChartP99VsLoad, ChartHitBalancers, ChartP99Replicas} {
		if _, ok := charts[name]; ok {
			fmt.Fprintf(&sb, "![%s](%s)\n\n", strings.TrimSuffix(name, ".png"), name)
		}
	}
	sb.WriteString("Numbers come from `inferrail sim` (a latency model of Llama-3.1-8B on one H100), not GPUs, on a shared machine; compare runs with each other, not with hardware.\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// stallLagMS is the send-lag p99 above which a run is flagged: the client
// machine stalled, so latencies below about this much are not the fleet's.
const stallLagMS = 100

// shareSpread is the min–max of the replicas' shares of requests.
func shareSpread(g *Group) string {
	shareLo, shareHi := 1.0, 0.0
	for _, r := range g.Reps {
		for _, v := range r.Summary.ReplicaShare {
			shareLo, shareHi = math.Min(shareLo, v), math.Max(shareHi, v)
		}
	}
	if shareHi == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f–%.2f", shareLo, shareHi)
}

// writeRow writes one run's row; its % oracle is over oracle's hit rate
// when the two are comparable.
func writeRow(sb *strings.Builder, g, oracle *Group) {
	m := g.mean
	s := func(f func(bench.Summary) float64) float64 {
		return m(func(r *bench.Result) float64 { return f(r.Summary) })
	}
	lo, hi := g.spread(func(r *bench.Result) float64 { return r.Summary.TTFT.P99 })
	p99 := fmt.Sprintf("%.0f", g.p99())
	if len(g.Reps) > 1 {
		p99 += fmt.Sprintf(" (%.0f–%.0f)", lo, hi)
	}
	hit := s(func(x bench.Summary) float64 { return x.HitRateUsage })
	bound := func(f func(*bench.Bounds) float64) float64 {
		return m(func(r *bench.Result) float64 {
			if r.Bounds == nil {
				return 0
			}
			return f(r.Bounds)
		})
	}
	pred := "-"
	if !bench.Predicts(g.Run.Policy) {
		pred = "n/a"
	} else if s(func(x bench.Summary) float64 { return float64(x.Predicted) }) > 0 {
		pred = fmt.Sprintf("%.1f%%", 100*s(func(x bench.Summary) float64 { return x.PredictionExact }))
	}
	share := shareSpread(g)
	oracleHit := 0.0
	if comparableToOracle(g, oracle) {
		oracleHit = oracle.hit()
	}
	label := g.Label
	if s(func(x bench.Summary) float64 { return x.SendLag.P99 }) > stallLagMS {
		label += " †"
	}
	hitText, pool, inf, ofOracle := "-", "-", "-", "-"
	if s(func(x bench.Summary) float64 { return float64(x.Usage) }) > 0 || hit > 0 {
		hitText = fmt.Sprintf("%.3f", hit)
		pool, inf = pct(hit, bound(func(b *bench.Bounds) float64 { return b.HPoolLRU })), pct(hit, bound(func(b *bench.Bounds) float64 { return b.HInf }))
		ofOracle = pct(hit, oracleHit)
	}
	fmt.Fprintf(sb, "| %s | %.0f | %.0f | %.0f | %s | %.1f | %.1f | %.0f | %.0f | %.2f | %.1f | %s | %.3f | %s | %s | %s | %s | %.1f | %s |\n",
		label, s(func(x bench.Summary) float64 { return float64(x.Requests) }), s(func(x bench.Summary) float64 { return float64(x.Failed) }),
		g.p50(), p99, s(func(x bench.Summary) float64 { return x.TPOT.P50 }),
		s(func(x bench.Summary) float64 { return x.ITL.P99 }), s(func(x bench.Summary) float64 { return x.E2E.P99 }),
		s(func(x bench.Summary) float64 { return x.OutputTokensPerSec }), s(func(x bench.Summary) float64 { return x.Goodput }),
		100*s(func(x bench.Summary) float64 { return x.GoodFraction }), hitText, s(func(x bench.Summary) float64 { return x.HitRateEngine }),
		pool, inf, ofOracle, pred, s(func(x bench.Summary) float64 { return x.SendLag.P99 }), share)
}
