package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// dbQuery is one PromQL expression of the Grafana dashboard.
type dbQuery struct {
	panel, expr string
}

// dbPanel is the part of a Grafana panel the tests read.
type dbPanel struct {
	Title   string    `json:"title"`
	Panels  []dbPanel `json:"panels"` // a collapsed row's panels
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// dbQueries reads every expression of deploy/grafana/inferrail.json.
func dbQueries(t *testing.T) []dbQuery {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(scRepoRoot(t), "deploy", "grafana", "inferrail.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string    `json:"uid"`
		Panels []dbPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var out []dbQuery
	var walk func([]dbPanel)
	walk = func(ps []dbPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, dbQuery{panel: p.Title, expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(out) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return out
}

// dbRateInterval is what Grafana's $__rate_interval becomes in the tests.
const dbRateInterval = "1m"

// dbExpand replaces Grafana's variables with values Prometheus accepts.
func dbExpand(expr string) string {
	return strings.ReplaceAll(expr, "$__rate_interval", dbRateInterval)
}

// dbSelector is one metric selector of an expression.
type dbSelector struct {
	name   string
	labels []string // the label names it matches on, but __name__
}

// dbSelectors parses expr and returns its metric selectors.
func dbSelectors(expr string) ([]dbSelector, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(dbExpand(expr))
	if err != nil {
		return nil, err
	}
	var out []dbSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := dbSelector{name: vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				s.name = m.Value
			} else {
				s.labels = append(s.labels, m.Name)
			}
		}
		out = append(out, s)
		return nil
	})
	return out, nil
}

// dbTargetLabels are the labels Prometheus adds to every scraped series.
var dbTargetLabels = []string{"instance", "job"}

// dbCheck returns a problem for every selector of q whose metric is neither
// in known (family name → label names) nor a histogram's or summary's
// series of one, or that matches on a label the metric does not have.
func dbCheck(q dbQuery, known map[string][]string) []string {
	sels, err := dbSelectors(q.expr)
	if err != nil {
		return []string{fmt.Sprintf("%s: %q does not parse: %v", q.panel, q.expr, err)}
	}
	var bad []string
	for _, s := range sels {
		labels, ok := known[s.name]
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if !ok && strings.HasSuffix(s.name, suf) {
				labels, ok = known[strings.TrimSuffix(s.name, suf)]
			}
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: %q names %s, which neither inferrail nor vLLM exports", q.panel, q.expr, s.name))
			continue
		}
		for _, l := range s.labels {
			if !slices.Contains(labels, l) && !slices.Contains(dbTargetLabels, l) && l != "le" && l != "quantile" {
				bad = append(bad, fmt.Sprintf("%s: %q matches %s on label %q, which it does not have (%v)", q.panel, q.expr, s.name, l, labels))
			}
		}
	}
	return bad
}

// dbKnownMetrics is every family inferrail's real registries describe and
// every vLLM family the simulator's vLLM page (modelled on vLLM's) serves,
// scraped from the real `inferrail sim` after traffic.
func dbKnownMetrics(t *testing.T, bin string) map[string][]string {
	t.Helper()
	known := map[string][]string{}
	cat := mcCatalog(t)
	f := mcRunningFamilies(t, bin, cat)
	for name, m := range cat {
		known[name] = m.labels
	}
	for name, f := range mcScrape(t, f.sims[0].url+"/metrics") {
		if !strings.HasPrefix(name, "vllm:") {
			continue
		}
		var labels []string
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if !slices.Contains(labels, lp.GetName()) {
					labels = append(labels, lp.GetName())
				}
			}
		}
		known[name] = labels
	}
	return known
}

// TestDashboardNamesRealMetrics parses every PromQL expression of the
// dashboard and fails on a metric that neither inferrail's registries nor
// vLLM's page has, or a label matcher on a label the metric lacks.
func TestDashboardNamesRealMetrics(t *testing.T) {
	bin := scBuild(t)
	known := dbKnownMetrics(t, bin)
	for _, q := range dbQueries(t) {
		for _, p := range dbCheck(q, known) {
			t.Error(p)
		}
	}
	// The check itself catches a misspelt name and a wrong label.
	for _, q := range []dbQuery{
		{"bad name", `sum(rate(inferrail_balancer_request_total[$__rate_interval]))`},
		{"bad vllm name", `vllm:num_requests_queued`},
		{"bad label", `sum(rate(inferrail_balancer_retries_total{replica="r0"}[$__rate_interval]))`},
		{"bad syntax", `sum(rate(inferrail_balancer_requests_total[$__rate_interval])`},
	} {
		if len(dbCheck(q, known)) == 0 {
			t.Errorf("the check accepted %q (%s)", q.expr, q.panel)
		}
	}
}
