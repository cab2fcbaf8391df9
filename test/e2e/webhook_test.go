package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/inferrail/inferrail/internal/kubetest"
	"github.com/inferrail/inferrail/kube/inject"
)

// whSelfSigned writes a self-signed serving certificate for 127.0.0.1 and
// returns the files and a pool that trusts it.
func whSelfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "inferrail-webhook.inferrail.svc"},
		DNSNames:     []string{"inferrail-webhook.inferrail.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// whPod is a vLLM pod as the API server hands it to a webhook.
func whPod(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "vllm-7d9f-", Namespace: "ml", Labels: map[string]string{inject.LabelInject: inject.InjectEnabled}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "vllm",
			Image: "vllm/vllm-openai:v0.11.0",
			Args: []string{"vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--port", "8001", "--served-model-name", "llama",
				"--kv-events-config", `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557"}`},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8001}},
		}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

type whClient struct {
	t    *testing.T
	c    *http.Client
	base string
}

// review sends pod in an AdmissionReview to path and returns the response.
func (w *whClient) review(path string, op admissionv1.Operation, pod *corev1.Pod) *admissionv1.AdmissionResponse {
	w.t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		w.t.Fatal(err)
	}
	rev := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "7b1c3f0e-uid", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: "ml", Operation: op, Object: runtime.RawExtension{Raw: raw},
		},
	}
	body, _ := json.Marshal(rev)
	resp, err := w.c.Post(w.base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("POST %s: %s", path, resp.Status)
	}
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		w.t.Fatal(err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil || out.Response.UID != "7b1c3f0e-uid" || !out.Response.Allowed {
		w.t.Fatalf("bad AdmissionReview response: %+v", out)
	}
	return out.Response
}

// whApply applies the response's JSON patch to pod the way the API server
// does (evanphx/json-patch) and decodes the result strictly.
func whApply(t *testing.T, pod *corev1.Pod, resp *admissionv1.AdmissionResponse) *corev1.Pod {
	t.Helper()
	raw, _ := json.Marshal(pod)
	if len(resp.Patch) > 0 {
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("patch type %v", resp.PatchType)
		}
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("decode patch: %v\n%s", err, resp.Patch)
		}
		if raw, err = p.Apply(raw); err != nil {
			t.Fatalf("apply patch: %v\n%s", err, resp.Patch)
		}
	}
	objs, err := kubetest.DecodeStrict(raw)
	if err != nil || len(objs) != 1 {
		t.Fatalf("strict decode of the patched pod: %v\n%s", err, raw)
	}
	return objs[0].Obj.(*corev1.Pod)
}

func whSidecar(p *corev1.Pod) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == inject.SidecarName {
			return &p.Spec.Containers[i]
		}
	}
	return nil
}

// TestWebhookE2E starts `inferrail webhook` over TLS and admits pods.
func TestWebhookE2E(t *testing.T) {
	bin := scBuild(t)
	certFile, keyFile, pool := whSelfSigned(t)
	port := scFreePort(t)
	flags := []string{"--image", "registry.example/inferrail:v9.9.9", "--join", "inferrail-gossip.inferrail.svc.cluster.local:7946"}
	scStart(t, bin, "webhook", append([]string{"webhook", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--log-level", "debug"}, flags...)...)
	w := &whClient{t: t, c: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
		base: fmt.Sprintf("https://127.0.0.1:%d", port)}
	scWait(t, "webhook /healthz over TLS", func() error {
		resp, err := w.c.Get(w.base + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})

	// A vLLM pod without annotations or volumes: the patch creates both.
	pod := whPod(nil)
	resp := w.review("/inject", admissionv1.Create, pod)
	injected := whApply(t, pod, resp)
	sc := whSidecar(injected)
	if sc == nil {
		t.Fatalf("no sidecar after the patch: %s", resp.Patch)
	}
	if got := strings.Join(sc.Args, " "); !strings.Contains(got, "--engine-url http://127.0.0.1:8001") ||
		!strings.Contains(got, "--kv-events-endpoint tcp://127.0.0.1:5557") || !strings.Contains(got, "--model llama") {
		t.Errorf("sidecar args %q", sc.Args)
	}
	if sc.Image != "registry.example/inferrail:v9.9.9" || injected.Annotations[inject.AnnotationInjected] != sc.Image || len(injected.Spec.Volumes) != 1 {
		t.Errorf("image %q annotations %v volumes %v", sc.Image, injected.Annotations, injected.Spec.Volumes)
	}

	// The same sidecar as `inferrail inject` builds for the same pod.
	cli := exec.Command(bin, append([]string{"inject", "--quiet"}, flags...)...)
	podYAML, _ := yaml.Marshal(pod)
	cli.Stdin = bytes.NewReader(podYAML)
	out, err := cli.Output()
	if err != nil {
		t.Fatalf("inferrail inject: %v", err)
	}
	objs, err := kubetest.DecodeStrict(out)
	if err != nil {
		t.Fatalf("strict decode of inject's output: %v", err)
	}
	if fromCLI := objs[0].Obj.(*corev1.Pod); !reflect.DeepEqual(fromCLI.Spec, injected.Spec) || !reflect.DeepEqual(fromCLI.Annotations, injected.Annotations) {
		t.Errorf("inject and the webhook disagree:\ninject:  %+v\nwebhook: %+v", fromCLI.Spec, injected.Spec)
	}

	// Reinvocation: an injected pod gets an empty patch.
	if again := w.review("/inject", admissionv1.Create, injected); len(again.Patch) != 0 || again.PatchType != nil {
		t.Errorf("an injected pod got a patch: %s", again.Patch)
	}

	// A pod with annotations and volumes already: the patch appends.
	pod = whPod(func(p *corev1.Pod) {
		p.Annotations = map[string]string{"team": "ml"}
		p.Spec.Volumes = []corev1.Volume{{Name: "models", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	})
	injected = whApply(t, pod, w.review("/inject", admissionv1.Create, pod))
	if whSidecar(injected) == nil || len(injected.Spec.Volumes) != 2 || injected.Annotations["team"] != "ml" || injected.Annotations[inject.AnnotationInjected] == "" {
		t.Errorf("appending patch: volumes %v annotations %v", injected.Spec.Volumes, injected.Annotations)
	}

	// Left alone: opted out, not an engine, not a CREATE, and (on
	// /inject-annotated) not annotated.
	for name, c := range map[string]struct {
		path string
		op   admissionv1.Operation
		pod  *corev1.Pod
	}{
		"opted out":     {"/inject", admissionv1.Create, whPod(func(p *corev1.Pod) { p.Labels[inject.LabelInject] = inject.InjectDisabled })},
		"no engine":     {"/inject", admissionv1.Create, whPod(func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"nginx"} })},
		"update":        {"/inject", admissionv1.Update, whPod(nil)},
		"not annotated": {"/inject-annotated", admissionv1.Create, whPod(nil)},
	} {
		if r := w.review(c.path, c.op, c.pod); len(r.Patch) != 0 {
			t.Errorf("%s: got a patch %s", name, r.Patch)
		}
	}
	annotated := whPod(func(p *corev1.Pod) { p.Annotations = map[string]string{inject.LabelInject: inject.InjectEnabled} })
	if whSidecar(whApply(t, annotated, w.review("/inject-annotated", admissionv1.Create, annotated))) == nil {
		t.Errorf("/inject-annotated did not inject an annotated pod")
	}

	// A pod that cannot be injected is admitted unchanged, with a warning.
	bad := whPod(func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8100 })
	r := w.review("/inject", admissionv1.Create, bad)
	if len(r.Patch) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "already uses port 8100") {
		t.Errorf("refused pod: patch %s warnings %q", r.Patch, r.Warnings)
	}

	// Not an AdmissionReview: a 4xx with the reason.
	for _, c := range []struct {
		ct, body string
		status   int
		want     string
	}{
		{"application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400, "no request"},
		{"application/json", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`, 400, "want apiVersion admission.k8s.io/v1"},
		{"application/json", `{`, 400, "decode AdmissionReview"},
		{"text/plain", `{}`, 415, "content type must be application/json"},
	} {
		resp, err := w.c.Post(w.base+"/inject", c.ct, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(b.String(), c.want) {
			t.Errorf("%s %q: %d %q, want %d %q", c.ct, c.body, resp.StatusCode, b.String(), c.status, c.want)
		}
	}
}
