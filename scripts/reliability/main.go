// Command reliability renders docs/reliability.md's table from the fault
// suite's results (`make stress`, `make soak`): one JSON line per measured
// row, the last line of each row winning. The table replaces what stands
// between the markers <!-- stress-table --> and <!-- /stress-table -->.
//
//	go run ./scripts/reliability -results bin/stress-results.jsonl -doc docs/reliability.md
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// row is one line of the results file (test/e2e's stRow).
type row struct {
	Row     string         `json:"row"`
	Fault   string         `json:"fault"`
	Result  string         `json:"result"`
	Figures map[string]any `json:"figures"`
	At      time.Time      `json:"at"`
	Passed  bool           `json:"passed"`
}

const begin, end = "<!-- stress-table -->", "<!-- /stress-table -->"

func main() {
	results := flag.String("results", "bin/stress-results.jsonl", "the results file the stress tests append to")
	doc := flag.String("doc", "docs/reliability.md", "the document whose table is replaced")
	flag.Parse()
	if err := run(*results, *doc); err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		os.Exit(1)
	}
}

func run(results, doc string) error {
	rows, err := read(results)
	if err != nil {
		return err
	}
	text, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	out, err := splice(text, table(rows))
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	return os.WriteFile(doc, out, 0o644)
}

// read returns the last result of each row, in row order.
func read(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	last := map[string]row{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if r.Row == "" {
			return nil, fmt.Errorf("%s:%d: a result without a row id", path, n)
		}
		last[r.Row] = r
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var rows []row
	for _, r := range last {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.Row, b.Row) })
	return rows, nil
}

// table renders the rows as Markdown.
func table(rows []row) string {
	var b strings.Builder
	b.WriteString("| # | fault | measured | passed | run (UTC) |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		id, _, _ := strings.Cut(r.Row, "-")
		pass := "yes"
		if !r.Passed {
			pass = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", id, cell(r.Fault), cell(r.Result), pass, r.At.UTC().Format("2006-01-02 15:04"))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// splice puts tbl between the markers of text.
func splice(text []byte, tbl string) ([]byte, error) {
	i, j := bytes.Index(text, []byte(begin)), bytes.Index(text, []byte(end))
	if i < 0 || j < i {
		return nil, errors.New("no " + begin + " … " + end + " markers")
	}
	var out bytes.Buffer
	out.Write(text[:i+len(begin)])
	out.WriteString("\n" + tbl)
	out.Write(text[j:])
	return out.Bytes(), nil
}
