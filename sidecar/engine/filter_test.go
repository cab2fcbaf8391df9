package engine_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/inferrail/inferrail/sidecar/engine/sglang"
	"github.com/inferrail/inferrail/sidecar/engine/vllm"
)

func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, glob := range []string{"vllm/testdata/*.txt", "sglang/testdata/*.txt"} {
		paths, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[p] = b
		}
	}
	if len(out) < 4 {
		t.Fatalf("only %d fixture pages", len(out))
	}
	return out
}

// loadOf extracts a page's load with t after parsing it whole or filtered.
func loadOf(page []byte, t engine.MetricNames, filtered bool) (engine.Load, error) {
	var p engine.Page
	var err error
	if filtered {
		p, err = engine.ParsePageFor(bytes.NewReader(page), 0, vllm.Names, sglang.Names)
	} else {
		p, err = engine.ParsePage(bytes.NewReader(page), 0)
	}
	if err != nil {
		return engine.Load{}, err
	}
	return engine.ExtractLoad(p, t)
}

// Parsing only the families the tables read gives the same load as parsing
// the whole page, on every fixture page and with either table.
func TestParsePageForMatchesFullParse(t *testing.T) {
	for name, page := range fixtures(t) {
		for _, table := range []engine.MetricNames{vllm.Names, sglang.Names} {
			full, errFull := loadOf(page, table, false)
			filtered, errFiltered := loadOf(page, table, true)
			if (errFull == nil) != (errFiltered == nil) {
				t.Errorf("%s with %s: full parse error %v, filtered %v", name, table.Kind, errFull, errFiltered)
				continue
			}
			if diff := cmp.Diff(full, filtered); diff != "" {
				t.Errorf("%s with %s: load (-full +filtered):\n%s", name, table.Kind, diff)
			}
		}
	}
}

func TestParsePageForBoundsWork(t *testing.T) {
	// Most of the page is a family nobody reads: the load is the real one.
	page := hostilePage(t, "vllm:unused_gauge", 1<<20)
	got, err := engine.ParseLoad(bytes.NewReader(page), 2<<20, vllm.Names)
	if err != nil {
		t.Fatal(err)
	}
	want, err := loadOf(hostilePage(t, "vllm:unused_gauge", 0), vllm.Names, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("load (-real page +with the unused family):\n%s", diff)
	}

	// A family the table reads with too many series: unreadable, saying why.
	page = hostilePage(t, "vllm:num_requests_waiting", 2<<20)
	_, err = engine.ParseLoad(bytes.NewReader(page), 4<<20, vllm.Names)
	if !errors.Is(err, engine.ErrUnreadable) || !strings.Contains(err.Error(), "vllm:num_requests_waiting has more than 16384 series") {
		t.Errorf("ParseLoad = %v, want unreadable: too many series", err)
	}
}

// FuzzParsePageFor checks that the filtered parse never panics and, where
// the whole page parses, agrees with it.
func FuzzParsePageFor(f *testing.F) {
	for _, page := range fixtures(f) {
		f.Add(page)
	}
	f.Add([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 1\nvllm:num_requests_running_total 2\n"))
	f.Fuzz(func(t *testing.T, page []byte) {
		full, errFull := loadOf(page, vllm.Names, false)
		filtered, errFiltered := loadOf(page, vllm.Names, true)
		if errFull == nil && errFiltered != nil {
			t.Fatalf("the whole page gives a load, the filtered parse fails: %v", errFiltered)
		}
		if errFull == nil && errFiltered == nil {
			if diff := cmp.Diff(full, filtered); diff != "" {
				t.Errorf("load (-full +filtered):\n%s", diff)
			}
		}
	})
}
