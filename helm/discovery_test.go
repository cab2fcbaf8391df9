package helm

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/inferrail/inferrail/balancer"
	"github.com/inferrail/inferrail/internal/kubetest"
)

// TestChartDiscovery: discovery.dns reaches the balancer config as the
// balancer's own loader reads it (strictly, over its defaults, validated),
// with service and selector turned into the headless Services' names, and
// a selector renders that headless Service.
func TestChartDiscovery(t *testing.T) {
	r := render(t, "ci/discovery-values.yaml", nil)
	cm := r.get(t, "ConfigMap", "inferrail-balancer").Obj.(*corev1.ConfigMap)
	cfg, err := balancer.DecodeConfig([]byte(cm.Data["balancer.yaml"]), balancer.DefaultConfig())
	if err != nil {
		t.Fatalf("balancer config: %v\n%s", err, cm.Data["balancer.yaml"])
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("balancer config does not validate: %v\n%s", err, cm.Data["balancer.yaml"])
	}
	want := balancer.DiscoveryConfig{
		Resolver: "10.96.0.10:53",
		DNS: []balancer.DNSGroupConfig{
			{Group: "vllm", Names: []string{"vllm-headless.ml.svc.cluster.example"}, Port: 8000,
				Interval: 10 * time.Second, Timeout: 2 * time.Second,
				Models: []string{"meta-llama/Llama-3.1-8B-Instruct"}, MaxConcurrency: 64},
			{Group: "llama", Names: []string{"inferrail-llama.inferrail.svc.cluster.example"}, Port: 8080,
				Interval: 5 * time.Second, Timeout: 2 * time.Second,
				Models: []string{"llama-3.2-1b"}, MaxConcurrency: 4, ProbePath: "/health"},
			{Group: "external", Names: []string{"gpu-box-1.example.net", "gpu-box-2.example.net"}, Port: 8000,
				Interval: 5 * time.Second, Timeout: time.Second, Models: []string{"qwen3-8b"}},
		},
	}
	if diff := cmp.Diff(want, cfg.Discovery); diff != "" {
		t.Errorf("balancer config discovery mismatch (-want +got):\n%s\n%s", diff, cm.Data["balancer.yaml"])
	}
	if !cfg.Gossip.Enabled || len(cfg.Models) != 1 {
		t.Errorf("the rest of the config changed: gossip %+v models %+v", cfg.Gossip, cfg.Models)
	}

	svc := r.get(t, "Service", "inferrail-llama").Obj.(*corev1.Service)
	if svc.Namespace != "inferrail" || svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.PublishNotReadyAddresses ||
		!cmp.Equal(svc.Spec.Selector, map[string]string{"app": "llama-server"}) ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.IntValue() != 8080 {
		t.Errorf("headless Service of group llama: %+v %+v", svc.ObjectMeta, svc.Spec)
	}
	for k := range r {
		if strings.HasPrefix(k, "Service/inferrail-") && (strings.HasSuffix(k, "-vllm") || strings.HasSuffix(k, "-external")) {
			t.Errorf("%s rendered for a group without a selector", k)
		}
	}

	// Without groups the config has no discovery section and no Service
	// is rendered.
	d := render(t, "", nil)
	cm = d.get(t, "ConfigMap", "inferrail-balancer").Obj.(*corev1.ConfigMap)
	if strings.Contains(cm.Data["balancer.yaml"], "discovery") {
		t.Errorf("default balancer config has a discovery section:\n%s", cm.Data["balancer.yaml"])
	}
	if _, ok := d["Service/inferrail-llama"]; ok {
		t.Errorf("a discovery Service rendered by default")
	}
}

// TestChartDiscoveryNamespace: a selector group with a namespace renders its
// Service there and names it there.
func TestChartDiscoveryNamespace(t *testing.T) {
	objs := renderValues(t, "discovery:\n  dns:\n    - {group: sg, selector: {app: sglang}, namespace: ml, port: 30000, models: [qwen]}\n")
	var cm *corev1.ConfigMap
	var svc *corev1.Service
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *corev1.ConfigMap:
			if v.Name == "inferrail-balancer" {
				cm = v
			}
		case *corev1.Service:
			if v.Name == "inferrail-sg" {
				svc = v
			}
		}
	}
	if cm == nil || svc == nil {
		t.Fatalf("no balancer ConfigMap (%v) or Service inferrail-sg (%v)", cm != nil, svc != nil)
	}
	if svc.Namespace != "ml" {
		t.Errorf("Service inferrail-sg in namespace %q, want ml", svc.Namespace)
	}
	cfg, err := balancer.DecodeConfig([]byte(cm.Data["balancer.yaml"]), balancer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Discovery.DNS[0].Names; !cmp.Equal(got, []string{"inferrail-sg.ml.svc.cluster.local"}) {
		t.Errorf("names %q", got)
	}
	if cfg.Discovery.Resolver != "" {
		t.Errorf("resolver %q, want the pod's", cfg.Discovery.Resolver)
	}
}

// TestChartDiscoveryRejectsBadValues: every problem of discovery is
// reported at once, each with its path and value.
func TestChartDiscoveryRejectsBadValues(t *testing.T) {
	values := `discovery:
  resolver: nowhere
  clusterDomain: "Bad Domain"
  refresh: 5s
  dns:
    - group: Pool
      service: vllm
      names: [a.example]
      port: 0
      models: []
      refresh: 5s
    - group: pool
      service: vllm
      port: 8000
      models: [m]
    - group: pool
      names: [b.example]
      namespace: ml
      port: 80.5
      models: [m]
    - group: a-group-name-that-is-far-too-long-to-fit-in-a-service-name
      selector: {app: x}
      port: 8000
      models: [m]
    - group: sel
      selector: {}
      port: "8000"
      models: m
    - just a string
balancer:
  config:
    discovery:
      dns: [{group: x}]
`
	_, err := renderErr(t, values)
	if err == nil {
		t.Fatal("bad discovery values rendered")
	}
	for _, want := range []string{
		"discovery.refresh: unknown key",
		`discovery.resolver must be host:port, got "nowhere"`,
		`discovery.clusterDomain must be a DNS domain, got "Bad Domain"`,
		"balancer.config.discovery must be empty when discovery.dns is set",
		`discovery.dns[0].group must be a DNS label (lower-case letters, digits and -), got "Pool"`,
		"discovery.dns[0].refresh: unknown key",
		"discovery.dns[0] must set one of names, service or selector, got [names service]",
		"discovery.dns[0].port must be the engines' port in [1, 65535], got 0",
		"discovery.dns[0].models must name at least one model, got []",
		`discovery.dns[2].group "pool" is not unique`,
		"discovery.dns[2].namespace goes with service or selector, not names",
		"discovery.dns[2].port must be the engines' port in [1, 65535], got 80.5",
		`discovery.dns[3].group "a-group-name-that-is-far-too-long-to-fit-in-a-service-name" makes the Service name "inferrail-a-group-name-that-is-far-too-long-to-fit-in-a-service-name" longer than 63 characters`,
		"discovery.dns[4].selector must be the labels of the engine pods, got {}",
		"discovery.dns[4].port must be the engines' port in [1, 65535], got \"8000\"",
		"discovery.dns[4].models must name at least one model, got \"m\"",
		`discovery.dns[5] must be a map (group, service or names or selector, port, models), got "just a string"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "discovery.dns[1]") {
		t.Errorf("the good entry discovery.dns[1] is reported:\n%v", err)
	}
}

// renderErr renders the chart with values (one values file's text).
func renderErr(t *testing.T, values string) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := writeFile(f, values); err != nil {
		t.Fatal(err)
	}
	return kubetest.Render(chartDir, kubetest.Release{Name: "inferrail", Namespace: "inferrail", ValueFiles: []string{f}})
}

// renderValues renders the chart with values and decodes every object
// strictly.
func renderValues(t *testing.T, values string) []kubetest.Object {
	t.Helper()
	manifest, err := renderErr(t, values)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs, err := kubetest.DecodeStrict([]byte(manifest))
	if err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	return objs
}
