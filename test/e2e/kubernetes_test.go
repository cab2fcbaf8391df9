package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inferrail/inferrail/internal/kubetest"
)

var update = flag.Bool("update", false, "rewrite the rendered manifests in docs/kubernetes")

// The example install of docs/kubernetes.md.
const (
	k8sDocsValues = "docs/kubernetes/values.yaml"
	k8sDocsEngine = "docs/kubernetes/vllm-deployment.yaml"
	k8sRendered   = "docs/kubernetes/inferrail.yaml"
	k8sInjected   = "docs/kubernetes/vllm-deployment.injected.yaml"
	k8sEPPValues  = "docs/kubernetes/epp-values.yaml"
	k8sEPP        = "docs/kubernetes/inference-pool.yaml"
	k8sHeader     = "# Rendered from helm/inferrail by test/e2e TestKubernetesDocs; do not edit.\n"
)

// k8sRender renders the chart as release inferrail in namespace
// with value files relative to the repository root.
func k8sRender(t *testing.T, root, namespace string, files ...string) (string, []kubetest.Object) {
	t.Helper()
	rel := kubetest.Release{Name: "inferrail", Namespace: namespace, APIVersions: []string{"cert-manager.io/v1"}}
	for _, f := range files {
		rel.ValueFiles = append(rel.ValueFiles, filepath.Join(root, f))
	}
	out, err := kubetest.Render(filepath.Join(root, "helm/inferrail"), rel)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kubetest.DecodeStrict([]byte(out))
	if err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	return out, objs
}

func k8sFind[T any](t *testing.T, objs []kubetest.Object, name string) T {
	t.Helper()
	for _, o := range objs {
		if v, ok := o.Obj.(T); ok && o.Name == name {
			return v
		}
	}
	var zero T
	t.Fatalf("no %T %q rendered", zero, name)
	return zero
}

// k8sSidecarFlags are the flags the chart gives the webhook for building
// the sidecar: its own flags (listen, TLS, log level) dropped.
func k8sSidecarFlags(t *testing.T, objs []kubetest.Object) []string {
	t.Helper()
	args := k8sFind[*appsv1.Deployment](t, objs, "inferrail-webhook").Spec.Template.Spec.Containers[0].Args
	if args[0] != "webhook" {
		t.Fatalf("webhook args %q", args)
	}
	var out []string
	for i := 1; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--listen", "--tls-cert-file", "--tls-key-file", "--log-level":
		default:
			out = append(out, args[i], args[i+1])
		}
	}
	return out
}

// k8sInject runs `inferrail inject` with flags on file.
func k8sInject(t *testing.T, bin, file string, flags []string) []byte {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"inject", "--quiet"}, flags...), file)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inferrail inject %q: %v\n%s", cmd.Args, err, stderr.String())
	}
	return out
}

func k8sGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./test/e2e -run TestKubernetesDocs -update writes it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is not what the chart and inject produce now; go test ./test/e2e -run TestKubernetesDocs -update rewrites it", path)
	}
}

// TestKubernetesDocs checks that the manifests in docs/kubernetes are the
// chart's rendering of docs/kubernetes/values.yaml and the output of
// `inferrail inject` with the sidecar flags that install gives the webhook.
func TestKubernetesDocs(t *testing.T) {
	root := scRepoRoot(t)
	bin := scBuild(t)
	manifest, objs := k8sRender(t, root, "inferrail", k8sDocsValues)
	k8sGolden(t, filepath.Join(root, k8sRendered), []byte(k8sHeader+manifest))

	injected := k8sInject(t, bin, filepath.Join(root, k8sDocsEngine), k8sSidecarFlags(t, objs))
	eng, err := kubetest.DecodeStrict(injected)
	if err != nil {
		t.Fatalf("strict decode of the injected Deployment: %v", err)
	}
	dep := eng[0].Obj.(*appsv1.Deployment)
	if n := len(dep.Spec.Template.Spec.Containers); n != 2 || dep.Spec.Template.Spec.Containers[1].Name != "inferrail-sidecar" {
		t.Fatalf("injected Deployment has %d containers", n)
	}
	k8sGolden(t, filepath.Join(root, k8sInjected), injected)

	// The endpoint-picker example: the InferencePool and HTTPRoute the chart
	// renders for it, installed beside the engines in ml.
	manifest, _ = k8sRender(t, root, "ml", k8sDocsValues, k8sEPPValues)
	var epp strings.Builder
	in := false
	for _, part := range strings.Split(manifest, "---\n") {
		if strings.HasPrefix(part, "# Source: ") {
			in = strings.HasPrefix(part, "# Source: inferrail/templates/epp.yaml\n")
		}
		if in {
			epp.WriteString("---\n" + part)
		}
	}
	if !strings.Contains(epp.String(), "kind: InferencePool") || !strings.Contains(epp.String(), "kind: HTTPRoute") {
		t.Fatalf("no InferencePool and HTTPRoute rendered:\n%s", manifest)
	}
	k8sGolden(t, filepath.Join(root, k8sEPP), []byte(k8sHeader+epp.String()))
}

// TestKubernetesTopology starts, as local processes, the pods that the
// chart describes (the webhook, the balancers) and the engine pods as the
// chart's webhook admits them (the same as `inferrail inject` writes), with
// their command lines and config files and with simulators for vLLM; the
// balancers must learn the sidecars over gossip and route requests to them.
func TestKubernetesTopology(t *testing.T) {
	root := scRepoRoot(t)
	bin := scBuild(t)
	_, objs := k8sRender(t, root, "inferrail", k8sDocsValues, "test/e2e/testdata/k8s-topology-values.yaml")
	c := newK8sCluster(t, bin)
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *corev1.ConfigMap:
			c.configMaps[v.Name] = v.Data
		case *corev1.Secret:
			c.secrets[v.Name] = v.Data
		}
	}
	// docs/kubernetes.md step 1: the gossip key Secret, made by the user.
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	c.secrets["inferrail-gossip"] = map[string][]byte{"gossip.key": []byte(base64.StdEncoding.EncodeToString(key) + "\n")}

	// The webhook first, before Service names resolve in this test's DNS, so
	// its flags stay as the chart wrote them.
	wh := k8sFind[*appsv1.Deployment](t, objs, "inferrail-webhook")
	whPod := c.runPod("inferrail-webhook-0", c.allocIP(), wh.Spec.Template.Spec, nil)
	whPod.ready(t)

	bal := k8sFind[*appsv1.Deployment](t, objs, "inferrail-balancer")
	gossipSvc := k8sFind[*corev1.Service](t, objs, "inferrail-gossip")
	var balancers []*k8sPod
	for i := range int(*bal.Spec.Replicas) {
		ip := c.allocIP()
		if i == 0 {
			// The headless gossip Service resolves to the balancers; the
			// first is enough to join.
			c.dns[fmt.Sprintf("%s.inferrail.svc.cluster.local", gossipSvc.Name)] = ip
		}
		balancers = append(balancers, c.runPod(fmt.Sprintf("inferrail-balancer-%d", i), ip, bal.Spec.Template.Spec, nil))
	}

	// The engine pods as the webhook admits them: the docs' vLLM Deployment's
	// pod template sent in an AdmissionReview, over TLS verified with the
	// caBundle of the MutatingWebhookConfiguration for the webhook Service's
	// name, as the API server does.
	engineYAML, err := os.ReadFile(filepath.Join(root, k8sDocsEngine))
	if err != nil {
		t.Fatal(err)
	}
	src, err := kubetest.DecodeStrict(engineYAML)
	if err != nil {
		t.Fatal(err)
	}
	dep := src[0].Obj.(*appsv1.Deployment)
	mwc := k8sFind[*admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "inferrail-webhook")
	cc := mwc.Webhooks[0].ClientConfig
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cc.CABundle) {
		t.Fatalf("caBundle is not PEM")
	}
	wc := &whClient{t: t, base: fmt.Sprintf("https://%s:%d", whPod.ip, wh.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort),
		c: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, ServerName: cc.Service.Name + "." + cc.Service.Namespace + ".svc"}}}}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: dep.Spec.Template.ObjectMeta, Spec: dep.Spec.Template.Spec}
	pod.Namespace, pod.GenerateName = "ml", "vllm-llama-"
	admitted := whApply(t, pod, wc.review(*cc.Service.Path, admissionv1.Create, pod))
	if whSidecar(admitted) == nil {
		t.Fatalf("the webhook did not inject the docs' vLLM pod")
	}
	// The same pod as `inferrail inject` writes (docs/kubernetes).
	injected := k8sInject(t, bin, filepath.Join(root, k8sDocsEngine), k8sSidecarFlags(t, objs))
	eng, err := kubetest.DecodeStrict(injected)
	if err != nil {
		t.Fatal(err)
	}
	if fromCLI := eng[0].Obj.(*appsv1.Deployment).Spec.Template.Spec; !reflect.DeepEqual(fromCLI, admitted.Spec) {
		t.Errorf("the chart's webhook and inject disagree:\nwebhook %+v\ninject  %+v", admitted.Spec, fromCLI)
	}
	// vLLM's command line, run by `inferrail sim`, which takes vLLM's flags.
	sim := func(ctr *corev1.Container, ip string) []string {
		argv := append(slices.Clone(ctr.Command), ctr.Args...)
		i := slices.Index(argv, "serve")
		if i < 0 {
			return nil
		}
		return append(append([]string{"sim", "--host", ip}, argv[i+2:]...), "--zero-latency", "--num-gpu-blocks-override", "4000")
	}
	var engines []*k8sPod
	var names []string
	for i := range int(*dep.Spec.Replicas) {
		name := fmt.Sprintf("vllm-llama-%d", i)
		names = append(names, name)
		engines = append(engines, c.runPod(name, c.allocIP(), admitted.Spec, sim))
	}
	for _, p := range append(slices.Clone(engines), balancers...) {
		p.ready(t) // balancers: GET /health answers 200 once a replica is healthy
	}

	for _, b := range balancers {
		url := fmt.Sprintf("http://%s:%d", b.ip, bal.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort)
		scWait(t, b.name+" routes llama-8b to the engine pods", func() error {
			seen := map[string]bool{}
			for range 8 {
				body := `{"model":"llama-8b","messages":[{"role":"user","content":"hello from the topology test"}],"max_tokens":4}`
				req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer sk-topology-test") // the chart's api-keys Secret
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("%s: %s", resp.Status, b)
				}
				var out struct {
					Choices []json.RawMessage `json:"choices"`
				}
				if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
					return fmt.Errorf("bad completion %s: %v", b, err)
				}
				rep := resp.Header.Get("X-Inferrail-Replica")
				if !slices.Contains(names, rep) {
					return fmt.Errorf("routed to %q, not an engine pod %v", rep, names)
				}
				seen[rep] = true
			}
			if len(seen) == 0 {
				return fmt.Errorf("no replica named")
			}
			return nil
		})
	}
	// Without the key: 401.
	resp, err := http.Post(fmt.Sprintf("http://%s:8080/v1/chat/completions", balancers[0].ip), "application/json", strings.NewReader(`{"model":"llama-8b"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without the API key got %s", resp.Status)
	}
	// Both sidecars joined: every balancer sees both engine pods.
	for _, b := range balancers {
		admin := fmt.Sprintf("http://%s:%d/v1/gossip/members", b.ip, bal.Spec.Template.Spec.Containers[0].Ports[1].ContainerPort)
		scWait(t, b.name+" sees both sidecars", func() error {
			resp, err := http.Get(admin)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, n := range names {
				if !strings.Contains(string(body), `"`+n+`"`) {
					return fmt.Errorf("%s not a member: %s", n, body)
				}
			}
			return nil
		})
	}
}

// TestInjectCLI runs `inferrail inject` on stdin and on a pod it must
// refuse: exit status 1, every reason on stderr, nothing on stdout.
func TestInjectCLI(t *testing.T) {
	bin := scBuild(t)
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - {name: e, image: x, args: [vllm, serve, m, --port, \"9100\"], ports: [{containerPort: 8100}]}\n"
	cmd := exec.Command(bin, "inject")
	cmd.Stdin = strings.NewReader(pod)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v", err)
	}
	for _, want := range []string{"nothing written", "stdin: document 1: Pod/p", "the engine's port 9100", `container "e" already uses port 8100`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout not empty: %s", stdout.String())
	}

	cmd = exec.Command(bin, "inject", "--join", "seed.example:7946", "-")
	cmd.Stdin = strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - {name: e, image: x, args: [vllm, serve, m]}\n")
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("inject: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "- seed.example:7946") || !strings.Contains(stderr.String(), "stdin: Pod/p: injected: vllm container \"e\" on port 8000") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if err := exec.Command(bin, "inject", "--data-port", "0", "/dev/null").Run(); err == nil {
		t.Errorf("--data-port 0 accepted")
	}
}
