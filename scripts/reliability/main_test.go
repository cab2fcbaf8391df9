package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunRendersTheLastResultOfEachRow(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "r.jsonl")
	doc := filepath.Join(dir, "d.md")
	lines := `{"row":"02-b","fault":"b","result":"old","at":"2026-01-01T00:00:00Z","passed":false}
{"row":"01-a","fault":"a | pipe","result":"ra","at":"2026-01-01T00:00:00Z","passed":true}
{"row":"02-b","fault":"b","result":"new","at":"2026-01-02T00:00:00Z","passed":true}
`
	if err := os.WriteFile(res, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, []byte("intro\n"+begin+"\nstale\n"+end+"\nafter\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(res, doc); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	got := string(b)
	for _, want := range []string{"| 01 | a \\| pipe | ra | yes |", "| 02 | b | new | yes |", "intro\n", "after\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("document lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "stale") || strings.Contains(got, "old") || strings.Index(got, "| 01") > strings.Index(got, "| 02") {
		t.Errorf("stale content or wrong order:\n%s", got)
	}
	if err := os.WriteFile(doc, []byte("no markers"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(res, doc); err == nil {
		t.Error("a document without markers was accepted")
	}
}
