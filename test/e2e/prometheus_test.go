package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pmKeyPanels are the dashboard panels whose every query must return a
// series with a value on a healthy fleet under traffic. The others (retries,
// ejections, errors, fallbacks, span export) stay empty while nothing fails.
var pmKeyPanels = []string{
	"TTFT p95 per replica (engine)", "TTFT p95 per replica (balancer)", "TTFT per policy", "Routing decision time p99",
	"Hit rate: predicted vs engine-reported", "Engine hit rate per replica", "Engine queues", "KV cache usage",
	"Balancer's load per replica", "Replica state", "Routing reasons", "Requests by outcome", "Tokenization time",
	"Prompt tokens and rejections", "Gossip freshness", "Stale data and members", "Summary sizes",
}

// pmResult is the Prometheus HTTP API's answer to an instant query.
type pmResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// pmQuery runs expr at Prometheus and returns the values of the series that
// have a finite one.
func pmQuery(base, expr string) ([]float64, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r pmResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, r.Error)
	}
	var out []float64
	for _, s := range r.Data.Result {
		v, _ := s.Value[1].(string)
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			out = append(out, f)
		}
	}
	return out, nil
}

// pmStart starts Debian's prometheus on loopback scraping jobs (job name
// → host:port targets) every second, and waits until it is ready.
func pmStart(t *testing.T, jobs map[string][]string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus is not installed: run `make fixtures` (scripts/prometheus.sh installs Debian's prometheus): %v", err)
	}
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n")
	names := make([]string, 0, len(jobs))
	for j := range jobs {
		names = append(names, j)
	}
	slices.Sort(names)
	for _, j := range names {
		q, _ := json.Marshal(jobs[j])
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs:\n      - targets: %s\n", j, q)
	}
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	port := scFreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	scStart(t, bin, "prometheus", "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	scWaitOK(t, "prometheus ready", base+"/-/ready")
	return base
}

func pmHostPort(u string) string { return strings.TrimPrefix(u, "http://") }

// TestDashboardOnPrometheus starts Debian's prometheus scraping a local
// fleet from the real binary (two sims, their sidecars, a balancer), sends
// traffic with shared prefixes, and runs the dashboard's key queries
// through the Prometheus HTTP API: each returns series with values.
func TestDashboardOnPrometheus(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 2, 1000, []string{"balancer-prom"})
	jobs := map[string][]string{"inferrail-balancer": {pmHostPort(f.bals[0].admin)}}
	for i := range f.sims {
		jobs["inferrail-sidecar"] = append(jobs["inferrail-sidecar"], pmHostPort(f.sidecars[i].admin))
		jobs["vllm"] = append(jobs["vllm"], pmHostPort(f.sims[i].url))
	}
	prom := pmStart(t, jobs)
	scWait(t, "every target scraped", func() error {
		up, err := pmQuery(prom, `sum(up)`)
		if err != nil {
			return err
		}
		if len(up) != 1 || up[0] != 5 {
			return fmt.Errorf("%v of 5 targets up", up)
		}
		return nil
	})
	queries := dbQueries(t)
	var key []dbQuery
	for _, q := range queries {
		if slices.Contains(pmKeyPanels, q.panel) {
			key = append(key, q)
		}
	}
	for _, p := range pmKeyPanels {
		if !slices.ContainsFunc(key, func(q dbQuery) bool { return q.panel == p }) {
			t.Fatalf("the dashboard has no panel %q", p)
		}
	}
	round := 0
	scWait(t, "the dashboard's key queries return series", func() error {
		// Traffic between polls keeps every rate window non-empty.
		for g := range 4 {
			if r := btComplete(f.bals[0].url, btPrefix(g)+fmt.Sprintf(" question %d", round), 8); r.err != nil {
				return r.err
			}
		}
		round++
		for _, q := range key {
			vs, err := pmQuery(prom, dbExpand(q.expr))
			if err != nil {
				return err
			}
			if len(vs) == 0 {
				return fmt.Errorf("%s: %q returns no series with a value", q.panel, q.expr)
			}
		}
		return nil
	})
}
