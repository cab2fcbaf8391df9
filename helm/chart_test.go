package helm

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/inferrail/inferrail/balancer"
	"github.com/inferrail/inferrail/balancer/gateway"
	"github.com/inferrail/inferrail/internal/kubetest"
)

const chartDir = "inferrail"

// valueSets are the installs the chart is tested with: the defaults and the
// value files of ci/, with the APIs their cluster serves.
var valueSets = []struct {
	file string
	apis []string
}{
	{"", nil},
	{"ci/default-values.yaml", nil},
	{"ci/production-values.yaml", []string{"monitoring.coreos.com/v1"}},
	{"ci/epp-values.yaml", []string{"cert-manager.io/v1", "inference.networking.k8s.io/v1", "gateway.networking.k8s.io/v1"}},
	{"ci/minimal-values.yaml", nil},
	{"ci/discovery-values.yaml", nil},
}

func TestChartLint(t *testing.T) {
	for _, vs := range valueSets {
		file := vs.file
		if file != "" {
			file = filepath.Join(chartDir, file)
		}
		msgs, err := kubetest.Lint(chartDir, "inferrail", file)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) > 0 {
			t.Errorf("helm lint with %q:\n%s", vs.file, strings.Join(msgs, "\n"))
		}
	}
}

// rendered is one install's objects, by kind and name.
type rendered map[string]kubetest.Object

func (r rendered) get(t *testing.T, kind, name string) kubetest.Object {
	t.Helper()
	o, ok := r[kind+"/"+name]
	if !ok {
		t.Fatalf("no %s %s rendered (have %v)", kind, name, r.names())
	}
	return o
}

func (r rendered) names() []string {
	var n []string
	for k := range r {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

func render(t *testing.T, file string, apis []string) rendered {
	t.Helper()
	rel := kubetest.Release{Name: "inferrail", Namespace: "inferrail", APIVersions: apis}
	if file != "" {
		rel.ValueFiles = []string{filepath.Join(chartDir, file)}
	}
	manifest, err := kubetest.Render(chartDir, rel)
	if err != nil {
		t.Fatalf("helm template with %q: %v", file, err)
	}
	objs, err := kubetest.DecodeStrict([]byte(manifest))
	if err != nil {
		t.Fatalf("strict decode of the chart with %q: %v", file, err)
	}
	out := rendered{}
	for _, o := range objs {
		key := o.GVK.Kind + "/" + o.Name
		if sec, ok := o.Obj.(*corev1.Secret); ok && sec.Namespace != "inferrail" {
			key += "@" + sec.Namespace
		}
		if _, dup := out[key]; dup {
			t.Errorf("%q renders %s twice", file, key)
		}
		out[key] = o
	}
	return out
}

func TestChartRenders(t *testing.T) {
	for _, vs := range valueSets {
		name := "defaults"
		if vs.file != "" {
			name = strings.TrimSuffix(filepath.Base(vs.file), ".yaml")
		}
		t.Run(name, func(t *testing.T) {
			r := render(t, vs.file, vs.apis)
			// The balancer's config file is one the balancer accepts.
			cm := r.get(t, "ConfigMap", "inferrail-balancer").Obj.(*corev1.ConfigMap)
			cfg, err := balancer.DecodeConfig([]byte(cm.Data["balancer.yaml"]), balancer.DefaultConfig())
			if err != nil {
				t.Fatalf("balancer config: %v\n%s", err, cm.Data["balancer.yaml"])
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("balancer config does not validate: %v", err)
			}
			if !cfg.Gossip.Enabled || cfg.Gossip.Join[0] != "inferrail-gossip.inferrail.svc.cluster.local:7946" || cfg.Listen != "0.0.0.0:8080" {
				t.Errorf("balancer config gossip %+v listen %q", cfg.Gossip, cfg.Listen)
			}
			dep := r.get(t, "Deployment", "inferrail-balancer").Obj.(*appsv1.Deployment)
			bc := dep.Spec.Template.Spec.Containers[0]
			if bc.Args[0] != "balancer" || bc.ReadinessProbe.HTTPGet.Path != "/health" || bc.LivenessProbe.HTTPGet.Path != "/healthz" {
				t.Errorf("balancer container args %q probes %+v %+v", bc.Args, bc.ReadinessProbe, bc.LivenessProbe)
			}
			if _, ok := r["Service/inferrail-gossip"]; !ok {
				t.Errorf("no headless gossip Service")
			}
			if got := r.get(t, "Service", "inferrail-gossip").Obj.(*corev1.Service); got.Spec.ClusterIP != "None" || !got.Spec.PublishNotReadyAddresses {
				t.Errorf("gossip Service %+v", got.Spec)
			}
		})
	}
}

func TestChartDefaults(t *testing.T) {
	r := render(t, "", nil)
	key := r.get(t, "Secret", "inferrail-gossip").Obj.(*corev1.Secret).Data["gossip.key"]
	if k, err := base64.StdEncoding.DecodeString(string(key)); err != nil || len(k) != 32 {
		t.Errorf("generated gossip key %q: %v (%d bytes)", key, err, len(k))
	}
	mwc := r.get(t, "MutatingWebhookConfiguration", "inferrail-webhook").Obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	var names []string
	for _, w := range mwc.Webhooks {
		names = append(names, w.Name)
		if *w.FailurePolicy != admissionregistrationv1.Ignore || len(w.ClientConfig.CABundle) == 0 || *w.ClientConfig.Service.Path != "/inject" {
			t.Errorf("webhook %s: failurePolicy %v caBundle %d bytes path %v", w.Name, *w.FailurePolicy, len(w.ClientConfig.CABundle), *w.ClientConfig.Service.Path)
		}
	}
	if !slices.Equal(names, []string{"pod.inject.inferrail.io", "namespace.inject.inferrail.io"}) {
		t.Errorf("webhooks %v", names)
	}
	tls := r.get(t, "Secret", "inferrail-webhook-tls").Obj.(*corev1.Secret)
	if string(tls.Data["ca.crt"]) != string(mwc.Webhooks[0].ClientConfig.CABundle) || len(tls.Data["tls.key"]) == 0 {
		t.Errorf("the caBundle is not the generated CA")
	}
	for _, k := range []string{"NetworkPolicy/inferrail-balancer", "NetworkPolicy/inferrail-webhook", "PodDisruptionBudget/inferrail-balancer", "Deployment/inferrail-webhook", "Service/inferrail-webhook", "ServiceAccount/inferrail-webhook"} {
		r.get(t, strings.Split(k, "/")[0], strings.Split(k, "/")[1])
	}
	for _, k := range []string{"HorizontalPodAutoscaler/inferrail-balancer", "ServiceMonitor/inferrail-balancer", "InferencePool/inferrail", "Certificate/inferrail-webhook", "Secret/inferrail-api-keys"} {
		if _, ok := r[k]; ok {
			t.Errorf("%s rendered by default", k)
		}
	}
	dep := r.get(t, "Deployment", "inferrail-balancer").Obj.(*appsv1.Deployment)
	if slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--epp") {
		t.Errorf("--epp on by default")
	}
}

func TestChartProduction(t *testing.T) {
	r := render(t, "ci/production-values.yaml", []string{"monitoring.coreos.com/v1"})
	if dep := r.get(t, "Deployment", "inferrail-balancer").Obj.(*appsv1.Deployment); dep.Spec.Replicas != nil {
		t.Errorf("replicas %d set under an HPA", *dep.Spec.Replicas)
	}
	r.get(t, "HorizontalPodAutoscaler", "inferrail-balancer")
	sm := string(r.get(t, "ServiceMonitor", "inferrail-balancer").YAML)
	admin := r.get(t, "Service", "inferrail-balancer-admin").Obj.(*corev1.Service)
	for k, v := range admin.Labels {
		if strings.HasPrefix(k, "app.kubernetes.io/") && k != "app.kubernetes.io/version" && k != "app.kubernetes.io/managed-by" && !strings.Contains(sm, k+": "+v) {
			t.Errorf("ServiceMonitor does not select the admin Service by %s=%s:\n%s", k, v, sm)
		}
	}
	if !strings.Contains(sm, "port: admin") {
		t.Errorf("ServiceMonitor does not scrape the admin port:\n%s", sm)
	}
	svc := r.get(t, "Service", "inferrail-balancer").Obj.(*corev1.Service)
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || svc.Annotations["service.beta.kubernetes.io/aws-load-balancer-type"] != "nlb" {
		t.Errorf("client Service %+v", svc)
	}
	// The gossip key also in the engines' namespace, and the same.
	a := r.get(t, "Secret", "inferrail-gossip").Obj.(*corev1.Secret)
	b := r.get(t, "Secret", "inferrail-gossip@ml").Obj.(*corev1.Secret)
	if string(a.Data["gossip.key"]) != string(b.Data["gossip.key"]) || string(a.Data["gossip.key"]) != "8G5xN7Qj4W3ZbV1mK9cR2tY6uP0aS5dF3gH7jL1qW2e=" {
		t.Errorf("gossip keys %q %q", a.Data["gossip.key"], b.Data["gossip.key"])
	}
	mwc := r.get(t, "MutatingWebhookConfiguration", "inferrail-webhook").Obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	if len(mwc.Webhooks) != 3 || *mwc.Webhooks[2].ClientConfig.Service.Path != "/inject-annotated" {
		t.Errorf("annotation opt-in webhook missing: %+v", mwc.Webhooks)
	}
	cm := r.get(t, "ConfigMap", "inferrail-balancer").Obj.(*corev1.ConfigMap)
	cfg, _ := balancer.DecodeConfig([]byte(cm.Data["balancer.yaml"]), balancer.DefaultConfig())
	if len(cfg.Models) != 1 || cfg.Models[0].Tokenizer != "/models/llama" || cfg.Gossip.ClusterLabel != "prod" {
		t.Errorf("values did not reach the balancer config: %+v", cfg)
	}
	// API keys: a Secret holding a keys file, mounted where the config's
	// auth.keys_file says, which the balancer's own parser accepts.
	keys := r.get(t, "Secret", "inferrail-api-keys").Obj.(*corev1.Secret)
	parsed, err := gateway.ParseKeysFile(keys.Data["keys.yaml"])
	if err != nil || len(parsed) != 2 || parsed[0].Key != "sk-team-a-0001" || parsed[1].Name != "key-2" ||
		cfg.Gateway.Auth.KeysFile != "/etc/inferrail/api-keys/keys.yaml" {
		t.Errorf("api keys Secret %q (%v), config %q", keys.Data["keys.yaml"], err, cfg.Gateway.Auth.KeysFile)
	}
	spec := r.get(t, "Deployment", "inferrail-balancer").Obj.(*appsv1.Deployment).Spec.Template.Spec
	if !slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/inferrail/api-keys" }) ||
		!slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "inferrail-api-keys" }) {
		t.Errorf("api keys not mounted: %+v %+v", spec.Containers[0].VolumeMounts, spec.Volumes)
	}
}

func TestChartEPP(t *testing.T) {
	r := render(t, "ci/epp-values.yaml", []string{"cert-manager.io/v1"})
	dep := r.get(t, "Deployment", "inferrail-balancer").Obj.(*appsv1.Deployment)
	c := dep.Spec.Template.Spec.Containers[0]
	if i := slices.Index(c.Args, "--epp"); i < 0 || c.Args[i+1] != ":9002" {
		t.Errorf("balancer args %q lack --epp :9002", c.Args)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "grpc-ext-proc" && p.ContainerPort == 9002 }) {
		t.Errorf("no grpc-ext-proc container port: %+v", c.Ports)
	}
	svc := r.get(t, "Service", "inferrail-balancer").Obj.(*corev1.Service)
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "grpc-ext-proc" && p.Port == 9002 }) {
		t.Errorf("no grpc-ext-proc Service port: %+v", svc.Spec.Ports)
	}
	pool := string(r.get(t, "InferencePool", "vllm-llama").YAML)
	for _, want := range []string{"name: inferrail-balancer", "number: 9002", "number: 8100", "app: vllm-llama"} {
		if !strings.Contains(pool, want) {
			t.Errorf("InferencePool lacks %q:\n%s", want, pool)
		}
	}
	r.get(t, "HTTPRoute", "vllm-llama")
	r.get(t, "Issuer", "inferrail-webhook")
	r.get(t, "Certificate", "inferrail-webhook")
	mwc := r.get(t, "MutatingWebhookConfiguration", "inferrail-webhook").Obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	if mwc.Annotations["cert-manager.io/inject-ca-from"] != "inferrail/inferrail-webhook" || len(mwc.Webhooks[0].ClientConfig.CABundle) != 0 {
		t.Errorf("cert-manager CA injection: %v", mwc.Annotations)
	}
	if _, ok := r["Secret/inferrail-webhook-tls"]; ok {
		t.Errorf("a generated TLS Secret next to cert-manager's")
	}
}

func TestChartMinimal(t *testing.T) {
	r := render(t, "ci/minimal-values.yaml", nil)
	for k := range r {
		if strings.Contains(k, "webhook") || strings.HasPrefix(k, "NetworkPolicy/") || strings.HasPrefix(k, "PodDisruptionBudget/") || strings.HasPrefix(k, "Secret/") {
			t.Errorf("%s rendered", k)
		}
	}
	dep := r.get(t, "Deployment", "inferrail-balancer").Obj.(*appsv1.Deployment)
	if v := dep.Spec.Template.Spec.Volumes[1]; v.Secret.SecretName != "my-gossip-key" {
		t.Errorf("gossip volume %+v", v)
	}
	if v := dep.Spec.Template.Spec.Volumes[2]; v.Secret.SecretName != "my-api-keys" {
		t.Errorf("api keys volume %+v", v)
	}
}

func TestChartRejectsBadValues(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"webhook:\n  certificate: vault\n", `webhook.certificate must be auto, cert-manager or generated, got "vault"`},
		{"epp:\n  enabled: true\n  inferencePool:\n    enabled: true\n", "epp.inferencePool.selector must name the labels"},
		{"discovery:\n  dns:\n    - {group: a, port: 80, models: [m]}\n", "discovery.dns[0] must set one of names, service or selector, got [none]"},
	} {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := writeFile(f, c.values); err != nil {
			t.Fatal(err)
		}
		_, err := kubetest.Render(chartDir, kubetest.Release{Name: "inferrail", Namespace: "inferrail", ValueFiles: []string{f}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %q: err %v, want %q", c.values, err, c.want)
		}
	}
}
