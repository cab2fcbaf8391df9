package e2e

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferrail/inferrail/balancer"
	"github.com/inferrail/inferrail/sidecar"
)

// mcMetric is one metric family a registry describes.
type mcMetric struct {
	name, help string
	labels     []string // variable and constant label names, sorted
}

// mcDescRe reads a prometheus.Desc's String(): its name, help and labels.
var mcDescRe = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), unit: "[^"]*", constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

// mcDescribe collects every family reg describes: each registered
// collector's descriptors, whether or not it has a series yet.
func mcDescribe(t *testing.T, reg prometheus.Collector, into map[string]mcMetric) {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	for d := range ch {
		m := mcDescRe.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("unreadable descriptor %s", d)
		}
		name, _ := strconv.Unquote(m[1])
		help, _ := strconv.Unquote(m[2])
		var labels []string
		for _, kv := range regexp.MustCompile(`(\w+)="`).FindAllStringSubmatch(m[3], -1) {
			labels = append(labels, kv[1])
		}
		for _, l := range strings.Split(m[4], ",") {
			if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
				labels = append(labels, l)
			}
		}
		sort.Strings(labels)
		labels = slices.Compact(labels)
		if prev, ok := into[name]; ok {
			labels = slices.Compact(slices.Sorted(slices.Values(append(prev.labels, labels...))))
		}
		into[name] = mcMetric{name: name, help: help, labels: labels}
	}
}

// mcHFTokenizer is a Hugging Face tokenizer among the test fixtures (make
// fixtures), so the tokenizer cache metrics are registered too.
func mcHFTokenizer(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(scRepoRoot(t), ".cache", "fixtures", "node_modules", "@lenml", "tokenizer-gpt35turbo", "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatalf("tokenizer fixture missing (run make fixtures): %v", err)
	}
	return dir
}

// mcCatalog is every metric the balancer and the sidecar register, read
// from their real registries: each built as the binaries build them, with
// gossip, KV events, a Hugging Face tokenizer, tracing, the response cache and
// DNS discovery on, so every
// optional part registers its metrics.
func mcCatalog(t *testing.T) map[string]mcMetric {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	out := map[string]mcMetric{}

	bc := balancer.DefaultConfig()
	bc.Listen, bc.Admin = "127.0.0.1:0", "127.0.0.1:0"
	bc.Gossip.Bind, bc.Gossip.Profile = "127.0.0.1:0", "local"
	bc.Observability.OTLPEndpoint = "http://127.0.0.1:1"
	bc.Models = []balancer.ModelConfig{{Name: "m", Tokenizer: mcHFTokenizer(t), BlockSize: 16}}
	bc.ResponseCache.Exact.Enabled = true
	bc.Discovery.DNS = []balancer.DNSGroupConfig{{Group: "catalog", Names: []string{"localhost"}, Port: 8000,
		Interval: time.Minute, Timeout: time.Second, Models: []string{"m"}}}
	if err := yamlModelDefaults(&bc); err != nil {
		t.Fatal(err)
	}
	breg := prometheus.NewRegistry()
	b, err := balancer.New(bc, log, breg)
	if err != nil {
		t.Fatalf("balancer.New: %v", err)
	}
	t.Cleanup(func() { _ = b.Node().Shutdown() })
	mcDescribe(t, breg, out)

	sc := sidecar.DefaultConfig()
	sc.Listen, sc.Admin, sc.Gossip.Bind, sc.Gossip.NodeName = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "catalog"
	sc.Tokenizer, sc.Model = "builtin:sim", "m"
	sc.KVEvents.Endpoint, sc.KVEvents.ReplayEndpoint = "tcp://127.0.0.1:1", "tcp://127.0.0.1:2"
	sc.Observability.OTLPEndpoint = "http://127.0.0.1:1"
	sreg := prometheus.NewRegistry()
	if _, err := sidecar.New(sc, log, sreg); err != nil {
		t.Fatalf("sidecar.New: %v", err)
	}
	mcDescribe(t, sreg, out)
	return out
}

// mcRunningFamilies adds the families that only a running sidecar
// registers (its exact block set and KV-event subscriber, built once the
// engine is known), scraped from a real fleet: sim, sidecar and balancer
// after traffic. It returns the fleet for further scrapes.
func mcRunningFamilies(t *testing.T, bin string, into map[string]mcMetric) *btFleet {
	t.Helper()
	f := btStartFleet(t, bin, 1, 1000, []string{"balancer-catalog"})
	for i := range 3 {
		if r := btComplete(f.bals[0].url, btPrefix(i), 4); r.err != nil {
			t.Fatal(r.err)
		}
	}
	scWait(t, "the sidecar's exact block set", func() error {
		if _, ok := mcScrape(t, f.sidecars[0].admin+"/metrics")["inferrail_sidecar_blockset_blocks"]; !ok {
			return fmt.Errorf("no inferrail_sidecar_blockset_blocks yet")
		}
		return nil
	})
	for _, url := range []string{f.sidecars[0].admin + "/metrics", f.bals[0].admin + "/metrics"} {
		for name, fam := range mcScrape(t, url) {
			if _, ok := into[name]; ok || !strings.HasPrefix(name, "inferrail_") {
				continue
			}
			var labels []string
			for _, m := range fam.GetMetric() {
				for _, lp := range m.GetLabel() {
					labels = append(labels, lp.GetName())
				}
			}
			into[name] = mcMetric{name: name, help: fam.GetHelp(), labels: slices.Compact(slices.Sorted(slices.Values(labels)))}
		}
	}
	return f
}

// yamlModelDefaults decodes the models over their defaults, as a config
// file would.
func yamlModelDefaults(c *balancer.Config) error {
	var y strings.Builder
	y.WriteString("models:\n")
	for _, m := range c.Models {
		fmt.Fprintf(&y, "  - name: %s\n    tokenizer: %q\n    block_size: %d\n", m.Name, m.Tokenizer, m.BlockSize)
	}
	got, err := balancer.DecodeConfig([]byte(y.String()), *c)
	if err != nil {
		return err
	}
	*c = got
	return nil
}

// mcScrape returns the families of a real binary's metrics page.
func mcScrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}
