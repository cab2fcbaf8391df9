package inject

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/inferrail/inferrail/internal/kubetest"
)

func testOptions() Options {
	o := DefaultOptions("v1.2.3")
	o.Join = []string{"inferrail-gossip.ml.svc.cluster.local:7946"}
	return o
}

func mustInject(t *testing.T, in string, o Options) (string, []Report) {
	t.Helper()
	out, reports, err := InjectYAML([]byte(in), o)
	if err != nil {
		t.Fatalf("InjectYAML: %v", err)
	}
	return string(out), reports
}

// sidecarOf returns the injected container of the only pod template of the
// strictly decoded output.
func podSpecs(t *testing.T, out string, skip ...string) []*corev1.PodTemplateSpec {
	t.Helper()
	objs, err := kubetest.DecodeStrict([]byte(out), skip...)
	if err != nil {
		t.Fatalf("strict decode of the output: %v\n%s", err, out)
	}
	var specs []*corev1.PodTemplateSpec
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *corev1.List:
			for _, it := range v.Items {
				specs = append(specs, podSpecs(t, string(it.Raw), skip...)...)
			}
		case *appsv1.Deployment:
			specs = append(specs, &v.Spec.Template)
		case *appsv1.StatefulSet:
			specs = append(specs, &v.Spec.Template)
		case *batchv1.CronJob:
			specs = append(specs, &v.Spec.JobTemplate.Spec.Template)
		case *corev1.Pod:
			specs = append(specs, &corev1.PodTemplateSpec{ObjectMeta: v.ObjectMeta, Spec: v.Spec})
		}
	}
	return specs
}

func container(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

func argValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func TestInjectVLLMDeployment(t *testing.T) {
	in, err := os.ReadFile("testdata/vllm-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, reports := mustInject(t, string(in), testOptions())
	if len(reports) != 1 || reports[0].Decision.Action != Inject || reports[0].Object != "Deployment/vllm-llama spec.template" {
		t.Fatalf("reports = %+v", reports)
	}
	for _, keep := range []string{"# A vLLM Deployment.", "app: vllm-llama # the pods", "kind: Service", `command: ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]`} {
		if !strings.Contains(out, keep) {
			t.Errorf("output lost %q:\n%s", keep, out)
		}
	}
	specs := podSpecs(t, out)
	if len(specs) != 1 {
		t.Fatalf("got %d pod templates", len(specs))
	}
	tmpl := specs[0]
	sc := container(&tmpl.Spec, SidecarName)
	if sc == nil {
		t.Fatalf("no sidecar container in %s", out)
	}
	want := map[string]string{
		"--engine-url":                "http://127.0.0.1:8000",
		"--engine":                    "vllm",
		"--listen":                    "0.0.0.0:8100",
		"--admin":                     "0.0.0.0:9100",
		"--gossip-bind":               "0.0.0.0:7946",
		"--join":                      "inferrail-gossip.ml.svc.cluster.local:7946",
		"--model":                     "llama-8b",
		"--kv-events-endpoint":        "tcp://127.0.0.1:5557",
		"--kv-events-replay-endpoint": "tcp://127.0.0.1:6557",
		"--gossip-key-file":           "/etc/inferrail/gossip/gossip.key",
	}
	for f, v := range want {
		if got := argValue(sc.Args, f); got != v {
			t.Errorf("sidecar %s = %q, want %q (args %q)", f, got, v, sc.Args)
		}
	}
	if sc.Args[0] != "sidecar" || sc.Image != "ghcr.io/inferrail/inferrail:v1.2.3" {
		t.Errorf("args[0] %q image %q", sc.Args[0], sc.Image)
	}
	env := map[string]string{}
	for _, e := range sc.Env {
		env[e.Name] = e.ValueFrom.FieldRef.FieldPath
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_IP"] != "status.podIP" {
		t.Errorf("downward API env = %v", env)
	}
	if sc.ReadinessProbe.HTTPGet.Path != "/healthz" || sc.ReadinessProbe.HTTPGet.Port.StrVal != PortAdmin || sc.LivenessProbe.TCPSocket == nil {
		t.Errorf("probes: readiness %+v liveness %+v", sc.ReadinessProbe, sc.LivenessProbe)
	}
	if sc.Resources.Requests.Cpu().String() != "100m" || sc.Resources.Limits.Memory().String() != "512Mi" {
		t.Errorf("resources = %+v", sc.Resources)
	}
	if len(tmpl.Spec.Volumes) != 1 || tmpl.Spec.Volumes[0].Secret.SecretName != "inferrail-gossip" {
		t.Errorf("volumes = %+v", tmpl.Spec.Volumes)
	}
	if tmpl.Annotations[AnnotationInjected] != sc.Image || tmpl.Labels[LabelSidecar] != "injected" || tmpl.Labels["app"] != "vllm-llama" {
		t.Errorf("annotations = %v labels = %v", tmpl.Annotations, tmpl.Labels)
	}

	again, reports := mustInject(t, out, testOptions())
	if again != out {
		t.Errorf("a second inject changed the output:\n%s", again)
	}
	if len(reports) != 1 || reports[0].Decision.Reason != ReasonInjected {
		t.Errorf("second pass reports = %+v", reports)
	}
}

// deployment wraps one engine container's YAML (indented as a list item of
// containers) in a Deployment.
func deployment(containers string, annotations ...string) string {
	ann := ""
	if len(annotations) > 0 {
		ann = "      annotations:\n"
		for i := 0; i+1 < len(annotations); i += 2 {
			ann += "        " + annotations[i] + ": " + `"` + annotations[i+1] + `"` + "\n"
		}
	}
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: e}
spec:
  selector: {matchLabels: {app: e}}
  template:
    metadata:
      labels: {app: e}
` + ann + `    spec:
      containers:
` + containers
}

func TestEngineCommandLines(t *testing.T) {
	cases := []struct {
		name, containers string
		ann              []string
		engine           string
		port             int
		kv, model        string
		dp, block        int
	}{
		{name: "vllm serve default port", containers: "        - {name: e, image: x, args: [vllm, serve, m]}\n", engine: "vllm", port: 8000},
		{name: "vllm api_server", containers: "        - name: e\n          image: x\n          command: [python3, -m, vllm.entrypoints.openai.api_server]\n          args: [--model, m, --port, \"9000\", --data-parallel-size, \"2\", --block-size, \"32\"]\n",
			engine: "vllm", port: 9000, dp: 2, block: 32},
		{name: "sglang launch_server", containers: "        - name: e\n          image: x\n          command: [python3, -m, sglang.launch_server, --model-path, m, --enable-metrics, --dp-size, \"4\", --page-size, \"16\", --served-model-name, qwen, --kv-events-config, '{\"publisher\":\"zmq\",\"endpoint\":\"tcp://0.0.0.0:5600\"}']\n",
			engine: "sglang", port: 30000, dp: 4, block: 16, model: "qwen", kv: "tcp://127.0.0.1:5600"},
		{name: "shell wrapper with quoted JSON", containers: "        - name: e\n          image: x\n          command: [/bin/sh, -c]\n          args:\n            - |\n              pip list && exec vllm serve m --port=8080 \\\n                --kv-events-config '{\"enable_kv_cache_events\":true,\"publisher\":\"zmq\"}'\n",
			engine: "vllm", port: 8080, kv: "tcp://127.0.0.1:5557"},
		{name: "kv events disabled", containers: "        - {name: e, image: x, args: [vllm, serve, m, --kv-events-config, '{\"enable_kv_cache_events\":false}']}\n", engine: "vllm", port: 8000},
		{name: "annotations override", containers: "        - {name: side, image: img, args: [run]}\n        - {name: e, image: x, command: [/start.sh]}\n",
			ann: []string{AnnotationContainer, "e", AnnotationEngine, "sglang", AnnotationPort, "7000", AnnotationModel, "mine"}, engine: "sglang", port: 7000, model: "mine"},
		{name: "llama-server", containers: "        - name: e\n          image: x\n          command: [/usr/local/bin/llama-server]\n          args: [-m, /models/m.gguf, --metrics, --port, \"8000\", --alias, llama-8b, -c, \"32768\"]\n",
			engine: "llamacpp", port: 8000, model: "llama-8b"},
		{name: "llama.cpp server image, args only, default port", containers: "        - {name: e, image: \"ghcr.io/ggml-org/llama.cpp:server\", args: [-m, /models/m.gguf, --metrics]}\n",
			engine: "llamacpp", port: 8080},
		{name: "llama-server in a shell, aliases", containers: "        - name: e\n          image: x\n          command: [sh, -c]\n          args: [\"exec /app/llama-server -m /m.gguf --metrics --host 0.0.0.0 --port=9000 -a 'zeta, alpha'\"]\n",
			engine: "llamacpp", port: 9000, model: "alpha"},
		{name: "llama.cpp server image from its environment", containers: "        - name: e\n          image: \"ghcr.io/ggml-org/llama.cpp:server-cuda@sha256:0123\"\n          args: [-m, /models/m.gguf, --alias, beta]\n          env:\n            - {name: LLAMA_ARG_PORT, value: \"8001\"}\n            - {name: LLAMA_ARG_ENDPOINT_METRICS, value: \"on\"}\n            - {name: LLAMA_ARG_ALIAS, value: gamma}\n",
			engine: "llamacpp", port: 8001, model: "beta"},
		{name: "llama-server flag over its environment", containers: "        - name: e\n          image: x\n          args: [llama-server, --metrics, --port, \"8002\"]\n          env: [{name: LLAMA_ARG_PORT, value: \"8001\"}]\n",
			engine: "llamacpp", port: 8002},
		{name: "llama-server port from valueFrom and the annotation", containers: "        - name: e\n          image: x\n          args: [llama-server, --metrics]\n          env: [{name: LLAMA_ARG_PORT, valueFrom: {configMapKeyRef: {name: c, key: port}}}]\n",
			ann: []string{AnnotationPort, "8003"}, engine: "llamacpp", port: 8003},
		{name: "llamacpp by annotation", containers: "        - {name: e, image: x, command: [/start.sh, --metrics]}\n",
			ann: []string{AnnotationEngine, "llamacpp"}, engine: "llamacpp", port: 8080},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := deployment(tc.containers, tc.ann...)
			if tc.engine == "sglang" && !strings.Contains(in, "--enable-metrics") {
				in = strings.Replace(in, "[/start.sh]", "[/start.sh, --enable-metrics]", 1)
			}
			out, reports := mustInject(t, in, testOptions())
			if len(reports) != 1 || reports[0].Decision.Action != Inject {
				t.Fatalf("reports = %+v", reports)
			}
			sc := container(&podSpecs(t, out)[0].Spec, SidecarName)
			if got := argValue(sc.Args, "--engine"); got != tc.engine {
				t.Errorf("--engine %q, want %q", got, tc.engine)
			}
			e := reports[0].Decision.Engine
			if e.Port != tc.port || e.KVEvents != tc.kv || e.Model != tc.model || max(tc.dp, 1) != e.DataParallelSize || e.BlockSize != tc.block {
				t.Errorf("engine = %+v", e)
			}
			if got, want := argValue(sc.Args, "--engine-url"), "http://127.0.0.1:"+itoa(tc.port); got != want {
				t.Errorf("--engine-url %q, want %q", got, want)
			}
			if got := argValue(sc.Args, "--kv-events-endpoint"); got != tc.kv {
				t.Errorf("--kv-events-endpoint %q, want %q", got, tc.kv)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestInjectRefusesWithReasons(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"sglang without metrics", deployment("        - {name: e, image: x, args: [python, -m, sglang.launch_server, --model-path, m]}\n"), "without --enable-metrics"},
		{"two engines", deployment("        - {name: a, image: x, args: [vllm, serve, m]}\n        - {name: b, image: x, args: [vllm, serve, m, --port, \"8001\"]}\n"), "name the one to front with " + AnnotationContainer},
		{"port taken", deployment("        - {name: e, image: x, args: [vllm, serve, m], ports: [{containerPort: 8100}]}\n"), `container "e" already uses port 8100`},
		{"engine on the sidecar port", deployment("        - {name: e, image: x, args: [vllm, serve, m, --port, \"9100\"]}\n"), "the engine's port 9100"},
		{"bad port annotation", deployment("        - {name: e, image: x, args: [vllm, serve, m]}\n", AnnotationPort, "http"), AnnotationPort + ` must be a port in 1..65535, got "http"`},
		{"named container missing", deployment("        - {name: e, image: x, args: [vllm, serve, m]}\n", AnnotationContainer, "nope"), `no container named "nope"`},
		{"llama-server without metrics", deployment("        - {name: e, image: x, args: [llama-server, -m, m.gguf]}\n"), `container "e" runs llama-server without --metrics`},
		{"llama-server metrics off in its environment", deployment("        - {name: e, image: \"ghcr.io/ggml-org/llama.cpp:server\", args: [-m, m.gguf], env: [{name: LLAMA_ARG_ENDPOINT_METRICS, value: \"0\"}]}\n"), "runs llama-server without --metrics"},
		{"llama-server port from valueFrom", deployment("        - {name: e, image: x, args: [llama-server, --metrics], env: [{name: LLAMA_ARG_PORT, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}\n"), "takes its port from a valueFrom variable (LLAMA_ARG_PORT): set the annotation " + AnnotationPort},
		{"llama-server bad port", deployment("        - {name: e, image: x, args: [llama-server, --metrics], env: [{name: LLAMA_ARG_PORT, value: http}]}\n"), `env LLAMA_ARG_PORT "http" is not a number in 1..65535`},
		{"llama-server on a unix socket", deployment("        - {name: e, image: x, args: [llama-server, --metrics, --host, /run/llama.sock]}\n"), `listens on the UNIX socket "/run/llama.sock"`},
		{"unknown engine annotation", deployment("        - {name: e, image: x, args: [vllm, serve, m]}\n", AnnotationEngine, "tgi"), AnnotationEngine + ` must be vllm, sglang or llamacpp, got "tgi"`},
		{"non-tcp events", deployment("        - {name: e, image: x, args: [vllm, serve, m, --kv-events-config, '{\"enable_kv_cache_events\":true,\"endpoint\":\"ipc:///tmp/kv\"}']}\n"), "the sidecar reads events over TCP only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := InjectYAML([]byte(tc.in), testOptions())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "document 1: Deployment/e spec.template") {
				t.Errorf("err does not name the object: %v", err)
			}
			if out != nil {
				t.Errorf("output written despite the error")
			}
		})
	}
}

func TestInjectKinds(t *testing.T) {
	in := `apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Pod
    metadata: {name: p}
    spec:
      containers: [{name: e, image: x, args: [vllm, serve, m]}]
  - apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: s}
    spec:
      serviceName: s
      selector: {matchLabels: {a: b}}
      template:
        metadata: {labels: {a: b}}
        spec:
          containers: [{name: e, image: x, args: [vllm, serve, m]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: e, image: x, command: [python, -m, sglang.launch_server, --enable-metrics]}]
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers: [{name: leader, image: x, command: [sh, -c, "ray start --head && vllm serve m --tensor-parallel-size 16"]}]
    workerTemplate:
      spec:
        containers: [{name: worker, image: x, command: [sh, -c, "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: opted-out}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b, inferrail.io/inject: disabled}}
    spec:
      containers: [{name: e, image: x, args: [vllm, serve, m]}]
`
	out, reports := mustInject(t, in, testOptions())
	got := map[string]string{}
	for _, r := range reports {
		got[r.Object] = r.Decision.String()[:8]
	}
	want := map[string]string{
		"Pod/p":                       "injected",
		"StatefulSet/s spec.template": "injected",
		"CronJob/c spec.jobTemplate.spec.template":                   "injected",
		"LeaderWorkerSet/l spec.leaderWorkerTemplate.leaderTemplate": "injected",
		"LeaderWorkerSet/l spec.leaderWorkerTemplate.workerTemplate": "skipped:",
		"Deployment/opted-out spec.template":                         "skipped:",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	n := 0
	for _, s := range podSpecs(t, out, "LeaderWorkerSet") {
		if container(&s.Spec, SidecarName) != nil {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d decoded templates carry the sidecar, want 3 (Pod, StatefulSet, CronJob)", n)
	}
	if strings.Count(out, "name: "+SidecarName) != 4 {
		t.Errorf("want 4 sidecars in the output (with the LeaderWorkerSet leader):\n%s", out)
	}
}

// TestLlamaCppLookalikesAreSkipped: llama.cpp images that run other tools,
// and server images told to run something else, are not engine pods.
func TestLlamaCppLookalikesAreSkipped(t *testing.T) {
	for _, c := range []string{
		"        - {name: e, image: \"ghcr.io/ggml-org/llama.cpp:full\", args: [--run, -m, m.gguf]}\n",
		"        - {name: e, image: \"ghcr.io/ggml-org/llama.cpp:light-cuda\", args: [-m, m.gguf]}\n",
		"        - {name: e, image: \"ghcr.io/ggml-org/llama.cpp:server\", command: [sh, -c, \"sleep 1d\"]}\n",
		"        - {name: e, image: \"example.com/llama.cpp-server:server\", args: [--metrics]}\n",
		"        - {name: e, image: x, args: [llama-server-helper, --metrics]}\n",
	} {
		_, reports := mustInject(t, deployment(c), testOptions())
		if len(reports) != 1 || reports[0].Decision.Action != Skip || reports[0].Decision.Reason != ReasonNoEngine {
			t.Errorf("%s: reports %+v, want a skip (%s)", c, reports, ReasonNoEngine)
		}
	}
}

func TestIsLlamaCppServerImage(t *testing.T) {
	for image, want := range map[string]bool{
		"ghcr.io/ggml-org/llama.cpp:server":                 true,
		"ghcr.io/ggml-org/llama.cpp:server-cuda":            true,
		"ghcr.io/ggml-org/llama.cpp:server-vulkan@sha256:1": true,
		"ghcr.io/ggerganov/llama.cpp:server":                true,
		"local/llama.cpp:server-musa":                       true,
		"llama.cpp:server":                                  true,
		"registry:5000/llama.cpp:server":                    true,
		"ghcr.io/ggml-org/llama.cpp:full":                   false,
		"ghcr.io/ggml-org/llama.cpp":                        false,
		"ghcr.io/ggml-org/llama.cpp@sha256:1":               false,
		"ghcr.io/ggml-org/llama.cpp:servers":                false,
		"ghcr.io/ggml-org/not-llama.cpp:server":             false,
		"":                                                  false,
	} {
		if got := isLlamaCppServerImage(image); got != want {
			t.Errorf("isLlamaCppServerImage(%q) = %v, want %v", image, got, want)
		}
	}
}

func TestInjectLeavesOtherYAMLAlone(t *testing.T) {
	for _, in := range []string{"", "---\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n", "- just\n- a list\n", "hello\n"} {
		out, reports, err := InjectYAML([]byte(in), testOptions())
		if err != nil || len(reports) != 0 {
			t.Errorf("%q: err %v reports %v", in, err, reports)
		}
		if in != "" && in != "---\n" && !bytes.Contains(out, []byte(strings.Fields(in)[0])) {
			t.Errorf("%q: output %q", in, out)
		}
	}
	if _, _, err := InjectYAML([]byte("a: [\n"), testOptions()); err == nil || !strings.Contains(err.Error(), "document 1") {
		t.Errorf("bad YAML: err = %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := testOptions()
	o.Image, o.DataPort, o.AdminPort, o.Join, o.CPURequest, o.Engine = "", 9100, 9100, []string{"nohost"}, "lots", "tgi"
	err := o.Validate()
	for _, want := range []string{`--image must be an image reference, got ""`, "--admin-port must differ from --data-port", `--join must be host:port, got "nohost"`, `--cpu-request must be a Kubernetes quantity`, `--engine must be vllm, sglang or llamacpp, got "tgi"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
	if DefaultOptions("v0.0.0-2026+dirty").Image != "ghcr.io/inferrail/inferrail:latest" {
		t.Errorf("a development version must not become an image tag")
	}
}

func FuzzInject(f *testing.F) {
	seed, _ := os.ReadFile("testdata/vllm-deployment.yaml")
	f.Add(seed)
	f.Add([]byte(deployment("        - {name: e, image: x, command: [sh, -c, \"vllm serve m --port '8001'\"]}\n")))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod, spec: {containers: null}}]\n"))
	f.Add([]byte("kind: Pod\napiVersion: v1\nspec: &a {containers: [*a]}\n"))
	f.Add([]byte(deployment("        - {name: e, image: \"ghcr.io/ggml-org/llama.cpp:server\", args: [--metrics, -a, 'x,y'], env: [{name: LLAMA_ARG_PORT, value: \"8001\"}]}\n")))
	o := testOptions()
	f.Fuzz(func(t *testing.T, in []byte) {
		out, _, err := InjectYAML(in, o)
		if err != nil {
			return
		}
		again, reports, err := InjectYAML(out, o)
		if err != nil {
			t.Fatalf("re-injecting the output failed: %v\n%s", err, out)
		}
		for _, r := range reports {
			if r.Decision.Action == Inject {
				t.Fatalf("the output was injected again: %s\n%s", r.Object, out)
			}
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%s\n---\n%s", out, again)
		}
	})
}
