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

// Several workloads: bench/results/<dir>/*.json.gz (and legacy plain *.json;
// one directory per workload, though each result's own workload name
// decides) rendered into <out>/<workload>/report.md and a top-level
// <out>/README.md with the goals over every workload and a headline table
// per workload.

// IndexFile is the top-level page of a multi-workload report.
const IndexFile = "README.md"

// HasResults reports whether dir itself holds result files (the
// single-directory layout).
func HasResults(dir string) bool {
	plain, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	gz, _ := filepath.Glob(filepath.Join(dir, "*"+bench.GzipSuffix))
	return len(plain)+len(gz) > 0
}

// workloadOrder ranks workloads in the index.
var workloadOrder = map[string]int{bench.W1: 1, bench.W2: 2, bench.W3: 3, bench.W6: 4, bench.Ladder: 5, bench.Mooncake: 6}

// ReadTree reads the results in every subdirectory of dir: each
// subdirectory is one part of the matrix (its name the part's; the workload
// its first result names), ordered W1, W2, W3, W6, ladder, mooncake, then
// others, and by part name within a workload. Subdirectories without
// results are skipped.
func ReadTree(dir string) ([]Set, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var sets []Set
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() || !HasResults(sub) {
			continue
		}
		results, err := ReadDir(sub)
		if err != nil {
			return nil, err
		}
		sets = append(sets, Set{Part: e.Name(), Workload: results[0].Workload.Name, Groups: GroupResults(results)})
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("no results in %s or its subdirectories", dir)
	}
	rank := func(w string) int { return cmp.Or(workloadOrder[w], len(workloadOrder)+1) }
	slices.SortFunc(sets, func(a, b Set) int {
		return cmp.Or(cmp.Compare(rank(a.Workload), rank(b.Workload)), cmp.Compare(a.Workload, b.Workload), cmp.Compare(a.Part, b.Part))
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

// WriteTree writes one report per part into dir/<part>/, the index
// dir/README.md (the matrix goals, the losing cells, the headline table, the
// earlier goals and a section per part) and the headline snippet
// dir/headline.md. Each part's report shows the goals its results measure.
func WriteTree(dir string, sets []Set, reproduce string) error {
	earlier := Evaluate(sets)
	for _, s := range sets {
		own, losses := MatrixGoals([]Set{s})
		own = measuredOnly(own)
		for _, g := range earlier {
			if g.Workload == s.Workload {
				own = append(own, g)
			}
		}
		pg := page{reproduce: reproduce, goals: own, losses: losses, goalsNote: fmt.Sprintf("Goals over every part: [%s](../%s).", IndexFile, IndexFile)}
		if err := writeDir(filepath.Join(dir, dirName(s.partName())), s.Groups, pg); err != nil {
			return fmt.Errorf("report of %s: %w", s.partName(), err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(index(sets, earlier, reproduce)), 0o644); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, HeadlineFile), []byte(HeadlineSnippet(sets, "")), 0o644); err != nil {
		return fmt.Errorf("write headline: %w", err)
	}
	return nil
}

// measuredOnly drops the goals a part does not measure at all.
func measuredOnly(goals []Goal) []Goal {
	var out []Goal
	for _, g := range goals {
		if g.Status != NotMeasured || g.Value != "-" {
			out = append(out, g)
		}
	}
	return out
}

// index renders the top-level page.
func index(sets []Set, earlier []Goal, reproduce string) string {
	var sb strings.Builder
	sb.WriteString("# inferrail benchmark reports\n\n")
	if reproduce != "" {
		fmt.Fprintf(&sb, "Reproduce: `%s` (`WORKLOADS=<part>` reruns one part; the report merges every part present).\n\n", reproduce)
	}
	goals, losses := MatrixGoals(sets)
	sb.WriteString("## Goals\n\nComputed over the matrix: a cell is one part at one load multiple (1× = round robin's measured capacity " +
		"where the part measured it); means over repetitions; p99 is TTFT p99.\n\n")
	goalsTable(&sb, goals)
	sb.WriteString("\n## Losing cells\n\nEvery cell that misses a goal, with the reason measured in its results.\n\n")
	lossTable(&sb, losses)
	sb.WriteString("\n## Headline\n\n")
	headlineMatrix(&sb, sets, "")
	sb.WriteString("\n## Earlier goals (issue 6)\n\n")
	goalsTable(&sb, earlier)
	if w1 := findSet(sets, bench.W1); w1 != nil {
		loadContext(&sb, w1.Groups)
	}
	for _, s := range sets {
		fmt.Fprintf(&sb, "\n## %s\n\n", s.partName())
		first := s.Groups[0].Reps[0]
		fmt.Fprintf(&sb, "Workload %s; %s; %v arrivals on %d replicas of %d blocks; full report: [%s/%s](%s/%s).\n\n",
			first.Workload.Name, baseLoad(s.Groups), first.Workload.Duration, first.Config.Replicas, first.Config.CacheBlocks,
			dirName(s.partName()), ReportFile, dirName(s.partName()), ReportFile)
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
			g.p50(), g.p99(), g.hit(),
			pct(g.hit(), g.bound(func(b *bench.Bounds) float64 { return b.HPoolLRU })), pct(g.hit(), oh),
			g.mean(func(r *bench.Result) float64 { return r.Summary.Goodput }), 100*g.good())
	}
}
