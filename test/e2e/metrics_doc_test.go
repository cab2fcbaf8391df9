package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// mdRowRe reads a metrics table row of docs/observability.md:
// | `name` | `label`, `label` | meaning |
var mdRowRe = regexp.MustCompile("^\\| `([a-z_:]+)` \\| ([^|]*) \\| (.+) \\|$")

// mdDocumentedOnly are metrics documented that the catalog's registries do
// not hold: the admission webhook's (a separate command, kube/webhook).
var mdDocumentedOnly = []string{"inferrail_webhook_reviews_total"}

// TestObservabilityDocListsEveryMetric checks that docs/observability.md
// has a row for every metric the balancer's and the sidecar's real
// registries describe, with exactly its labels, and no row for a metric
// that does not exist. A failure prints the rows to add.
func TestObservabilityDocListsEveryMetric(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(scRepoRoot(t), "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := mdRowRe.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || !strings.HasPrefix(m[1], "inferrail_") {
			continue
		}
		var labels []string
		for _, l := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[2], -1) {
			labels = append(labels, l[1])
		}
		sort.Strings(labels)
		rows[m[1]] = labels
	}
	cat := mcCatalog(t)
	mcRunningFamilies(t, scBuild(t), cat)
	var names []string
	for n := range cat {
		names = append(names, n)
	}
	sort.Strings(names)
	var missing []string
	for _, n := range names {
		m := cat[n]
		got, ok := rows[n]
		if !ok || !slices.Equal(got, m.labels) {
			var ls []string
			for _, l := range m.labels {
				ls = append(ls, "`"+l+"`")
			}
			missing = append(missing, "| `"+n+"` | "+strings.Join(ls, ", ")+" | "+m.help+" |")
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/observability.md lacks these rows, or lists other labels:\n%s", strings.Join(missing, "\n"))
	}
	for n := range rows {
		if _, ok := cat[n]; !ok && !slices.Contains(mdDocumentedOnly, n) {
			t.Errorf("docs/observability.md lists %s, which no registry describes", n)
		}
	}
}
