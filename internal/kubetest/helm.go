package kubetest

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// Release names a chart installation for Render.
type Release struct {
	Name, Namespace string
	// ValueFiles are merged in order over the chart's values.yaml, like
	// `helm template -f`.
	ValueFiles []string
	// APIVersions are the extra APIs the cluster serves (`helm template
	// --api-versions`), e.g. "cert-manager.io/v1".
	APIVersions []string
}

// Render renders the chart in dir as `helm template` does, with helm's Go
// SDK (no cluster: lookup finds nothing). It returns the manifest, every
// template's documents in helm's install order of files, each file headed
// by "# Source: chart/templates/file".
func Render(dir string, r Release) (string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("load chart: %w", err)
	}
	vals := map[string]any{}
	for _, f := range r.ValueFiles {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return "", fmt.Errorf("values %s: %w", f, err)
		}
		vals = chartutil.CoalesceTables(v.AsMap(), vals)
	}
	caps := *chartutil.DefaultCapabilities
	caps.APIVersions = append(slices.Clone(caps.APIVersions), r.APIVersions...)
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, IsInstall: true, Revision: 1}, &caps)
	if err != nil {
		return "", fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		body := strings.TrimSpace(files[name])
		if body == "" {
			continue
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", name, strings.TrimPrefix(body, "---\n"))
	}
	return b.String(), nil
}

// Lint runs `helm lint` (helm's Go SDK, strict) on the chart in dir with the
// values of valueFile ("" for the defaults) and returns its messages at
// severity warning or above.
func Lint(dir, namespace, valueFile string) ([]string, error) {
	vals := map[string]any{}
	if valueFile != "" {
		v, err := chartutil.ReadValuesFile(valueFile)
		if err != nil {
			return nil, fmt.Errorf("values %s: %w", valueFile, err)
		}
		vals = v.AsMap()
	}
	l := lint.All(dir, vals, namespace, true)
	var out []string
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			out = append(out, m.Error())
		}
	}
	return out, nil
}
