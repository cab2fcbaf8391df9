package render

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/inferrail/inferrail/bench"
)

// Several workloads: bench/results/<dir>/*.json (one directory per workload,
// though each result's own workload name decides) rendered into
// <out>/<workload>/report.md and a top-level <out>/README.md with the goals
// over every workload and a headline table per workload.

// IndexFile is the top-level page of a multi-workload report.
const IndexFile = "README.md"

// HasResults reports whether dir itself holds result files (the
// single-directory layout).
func HasResults(dir string) bool {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	return len(paths) > 0
}

// workloadOrder ranks workloads in the index.
var workloadOrder = map[string]int{bench.W1: 1, bench.W2: 2, bench.W3: 3, bench.W6: 4, bench.Mooncake: 5}

// ReadTree reads the results in every subdirectory of dir and groups them by
// the workload each result names, in the order W1, W2, W3, W6, mooncake and
// then others by name. Subdirectories without results are skipped.
func ReadTree(dir string) ([]Set, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	byWorkload := map[string][]*bench.Result{}
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() || !HasResults(sub) {
			continue
		}
		results, err := ReadDir(sub)
		if err != nil {
			return nil, err
		}
		for _, r := range results {
			byWorkload[r.Workload.Name] = append(byWorkload[r.Workload.Name], r)
		}
	}
	if len(byWorkload) == 0 {
		return nil, fmt.Errorf("no results in %s or its subdirectories", dir)
	}
	var sets []Set
	for name, results := range byWorkload {
		sets = append(sets, Set{Workload: name, Groups: GroupResults(results)})
	}
	rank := func(w string) int { return cmp.Or(workloadOrder[w], len(workloadOrder)+1) }
	slices.SortFunc(sets, func(a, b Set) int {
		return cmp.Or(cmp.Compare(rank(a.Workload), rank(b.Workload)), cmp.Compare(a.Workload, b.Workload))
	})
	return sets, nil
}

// dirName is a workload's report directory name.
func dirName(workload string) string {
	if workload == "" {
		return "unnamed"
	}
	return strings.NewReplacer("/", "_", " ", "_", "..", "_").Replace(workload)
}

// WriteTree writes one report per workload into dir/<workload>/ and the
// index dir/README.md: the goals over all workloads and a headline table per
// workload. Each workload's report shows the goals its results measure.
func WriteTree(dir string, sets []Set, reproduce string) error {
	goals := Evaluate(sets)
	for _, s := range sets {
		var own []Goal
		for _, g := range goals {
			if g.Workload == s.Workload {
				own = append(own, g)
			}
		}
		pg := page{reproduce: reproduce, goals: own, goalsNote: fmt.Sprintf("Goals over every workload: [%s](../%s).", IndexFile, IndexFile)}
		if err := writeDir(filepath.Join(dir, dirName(s.Workload)), s.Groups, pg); err != nil {
			return fmt.Errorf("report of %s: %w", s.Workload, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(index(sets, goals, reproduce)), 0o644); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}

// index renders the top-level page.
func index(sets []Set, goals []Goal, reproduce string) string {
	var sb strings.Builder
	sb.WriteString("# inferrail benchmark reports\n\n")
	if reproduce != "" {
		fmt.Fprintf(&sb, "Reproduce: `%s`\n\n", reproduce)
	}
	sb.WriteString("## Goals\n\nComputed from the results of each workload (means over repetitions; p99 is TTFT p99).\n\n")
	goalsTable(&sb, goals)
	if w1 := findSet(sets, bench.W1); w1 != nil {
		loadContext(&sb, w1.Groups)
	}
	for _, s := range sets {
		fmt.Fprintf(&sb, "\n## %s\n\n", s.Workload)
		first := s.Groups[0].Reps[0]
		fmt.Fprintf(&sb, "Base rate %.3g sessions/s for %v on %d replicas of %d blocks; full report: [%s/%s](%s/%s).\n\n",
			first.Workload.Rate, first.Workload.Duration, first.Config.Replicas, first.Config.CacheBlocks,
			dirName(s.Workload), ReportFile, dirName(s.Workload), ReportFile)
		headline(&sb, s.Groups)
		verdict(&sb, s.Groups)
	}
	sb.WriteString("\nNumbers come from `inferrail sim` (a latency model of Llama-3.1-8B on one H100), not GPUs, on a shared machine; compare runs with each other, not with hardware.\n")
	return sb.String()
}

// headline writes the runs at the base load: TTFT p50/p99, hit rate, its
// share of H_pool and of the oracle run, goodput.
func headline(sb *strings.Builder, groups []*Group) {
	oracle := oracleRun(groups)
	sb.WriteString("| run | TTFT p50 ms | TTFT p99 ms | hit rate | % H_pool | % oracle | goodput/s | good % |\n|---|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		if !isBase(g) {
			continue
		}
		oh := 0.0
		if comparableToOracle(g, oracle) {
			oh = oracle.hit()
		}
		fmt.Fprintf(sb, "| %s | %.0f | %.0f | %.3f | %s | %s | %.2f | %.1f |\n", g.Label,
			g.mean(func(r *bench.Result) float64 { return r.Summary.TTFT.P50 }), g.p99(), g.hit(),
			pct(g.hit(), g.bound(func(b *bench.Bounds) float64 { return b.HPoolLRU })), pct(g.hit(), oh),
			g.mean(func(r *bench.Result) float64 { return r.Summary.Goodput }), 100*g.good())
	}
}
