package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// writeRuns writes results into dir under names, each name's extension
// (.json or .json.gz) choosing the form.
func writeRuns(t *testing.T, dir string, names []string, results []*bench.Result) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		if err := results[i].WriteFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func readDirRuns() []*bench.Result {
	return []*bench.Result{
		fakeResult("cost_model", bench.RunInfo{Kind: bench.KindPolicy, Policy: "cost_model", Balancers: 1, Load: 1}, 0.6, 20*time.Millisecond, 50),
		fakeResult("cost_model-4b", bench.RunInfo{Kind: bench.KindBalancers, Policy: "cost_model", Balancers: 4, Load: 1}, 0.5, 30*time.Millisecond, 50),
		fakeResult("round_robin", bench.RunInfo{Kind: bench.KindPolicy, Policy: "round_robin", Balancers: 1, Load: 1}, 0.2, 200*time.Millisecond, 50),
	}
}

// A part whose runs are partly plain JSON (not rerun since results were
// compressed) and partly gzip reads every run once, in the order of the
// all-plain part, and renders the same report.
func TestReadDirPlainAndGzip(t *testing.T) {
	root := t.TempDir()
	results := readDirRuns()
	plainDir, mixedDir, gzDir := filepath.Join(root, "plain"), filepath.Join(root, "mixed"), filepath.Join(root, "gz")
	writeRuns(t, plainDir, []string{"cost_model-rep0.json", "cost_model-4b-rep0.json", "round_robin-rep0.json"}, results)
	writeRuns(t, mixedDir, []string{"cost_model-rep0.json.gz", "cost_model-4b-rep0.json", "round_robin-rep0.json.gz"}, results)
	writeRuns(t, gzDir, []string{"cost_model-rep0.json.gz", "cost_model-4b-rep0.json.gz", "round_robin-rep0.json.gz"}, results)
	labels := func(dir string) string {
		t.Helper()
		if !HasResults(dir) {
			t.Fatalf("HasResults(%s) is false", dir)
		}
		rs, err := ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var ls []string
		for _, r := range rs {
			ls = append(ls, r.Config.Label)
		}
		return strings.Join(ls, " ")
	}
	want := labels(plainDir)
	if want != "cost_model-4b cost_model round_robin" { // "-4b-rep0.json" sorts before "-rep0.json"
		t.Errorf("plain part read as %q", want)
	}
	for _, dir := range []string{mixedDir, gzDir} {
		if got := labels(dir); got != want {
			t.Errorf("%s read as %q, want %q (the plain part's)", filepath.Base(dir), got, want)
		}
	}
	report := func(dir string) []byte {
		t.Helper()
		rs, err := ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(root, "report-"+filepath.Base(dir))
		if err := Write(out, Ordered(rs), "make bench"); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, ReportFile))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if plain, mixed := report(plainDir), report(mixedDir); !bytes.Equal(plain, mixed) {
		t.Errorf("the mixed part's report differs from the plain part's:\n%s\n---\n%s", mixed, plain)
	}

	// The tree: one part all gzip, one mixed.
	tree := filepath.Join(root, "tree")
	writeRuns(t, filepath.Join(tree, "W1"), []string{"cost_model-rep0.json.gz", "round_robin-rep0.json.gz"}, []*bench.Result{results[0], results[2]})
	writeRuns(t, filepath.Join(tree, "W1b"), []string{"cost_model-rep0.json", "round_robin-rep0.json.gz"}, []*bench.Result{results[0], results[2]})
	sets, err := ReadTree(tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 {
		t.Fatalf("%d parts read, want 2", len(sets))
	}
	for _, s := range sets {
		n := 0
		for _, g := range s.Groups {
			n += len(g.Reps)
		}
		if n != 2 {
			t.Errorf("part %s: %d runs read, want 2", s.Part, n)
		}
	}
}

// X.json beside X.json.gz is one run written twice (a rerun's stale plain
// file): the report refuses it, naming both, rather than count it twice.
func TestReadDirRunInBothForms(t *testing.T) {
	root := t.TempDir()
	results := readDirRuns()
	part := filepath.Join(root, "W1")
	writeRuns(t, part, []string{"cost_model-rep0.json", "cost_model-rep0.json.gz", "round_robin-rep0.json.gz"}, results)
	plain, gz := filepath.Join(part, "cost_model-rep0.json"), filepath.Join(part, "cost_model-rep0.json.gz")
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s of a run in both forms gave no error", what)
		}
		if !strings.Contains(err.Error(), plain) || !strings.Contains(err.Error(), gz) {
			t.Errorf("%s: error %q does not name %s and %s", what, err, plain, gz)
		}
	}
	_, err := ReadDir(part)
	check("ReadDir", err)
	_, err = ReadTree(root)
	check("ReadTree", err)
}
