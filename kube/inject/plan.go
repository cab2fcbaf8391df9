package inject

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Action is what Plan decided for a pod.
type Action int

const (
	// Inject: add Decision.Container, Decision.Volume and the annotation.
	Inject Action = iota
	// Skip: leave the pod as it is (Decision.Reason says why).
	Skip
)

// Skip reasons.
const (
	ReasonInjected = "already injected"
	ReasonOptedOut = LabelInject + "=" + InjectDisabled
	ReasonNoEngine = "no vLLM, SGLang or llama.cpp container"
)

// Decision is Plan's answer for one pod template.
type Decision struct {
	Action Action
	// Reason says why a pod is skipped.
	Reason string
	// Engine is the engine container found.
	Engine EngineInfo
	// Container is the sidecar, appended to the pod's containers.
	Container corev1.Container
	// Volume is the gossip-key volume to append, or nil.
	Volume *corev1.Volume
	// Annotations are set on the pod (AnnotationInjected).
	Annotations map[string]string
	// Labels are set on the pod (LabelSidecar).
	Labels map[string]string
}

// Plan decides what to do with one pod template: its metadata (labels and
// annotations) and spec. An error is a pod that runs an engine but cannot
// be injected, with every reason at once; the pod must then be left as it
// is.
func Plan(meta metav1.ObjectMeta, spec *corev1.PodSpec, o Options) (Decision, error) {
	if _, ok := meta.Annotations[AnnotationInjected]; ok {
		return Decision{Action: Skip, Reason: ReasonInjected}, nil
	}
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for _, c := range list {
			if c.Name == SidecarName {
				return Decision{Action: Skip, Reason: ReasonInjected}, nil
			}
		}
	}
	if meta.Labels[LabelInject] == InjectDisabled || meta.Annotations[LabelInject] == InjectDisabled {
		return Decision{Action: Skip, Reason: ReasonOptedOut}, nil
	}
	var errs []error
	ann := meta.Annotations
	container, kind, port := o.EngineContainer, o.Engine, o.EnginePort
	if v, ok := ann[AnnotationContainer]; ok {
		container = v
	}
	if v, ok := ann[AnnotationEngine]; ok {
		if !validEngine(v) {
			errs = append(errs, fmt.Errorf("annotation %s must be %s, got %q", AnnotationEngine, engineKinds, v))
		}
		kind = v
	}
	if v, ok := ann[AnnotationPort]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			errs = append(errs, fmt.Errorf("annotation %s must be a port in 1..65535, got %q", AnnotationPort, v))
		}
		port = n
	}
	if len(errs) > 0 {
		return Decision{}, errors.Join(errs...)
	}
	e, ok, err := findEngine(spec, container, kind)
	if err != nil {
		return Decision{}, err
	}
	if !ok {
		return Decision{Action: Skip, Reason: ReasonNoEngine}, nil
	}
	if port > 0 {
		e.Port = port
	} else if e.Port == 0 {
		errs = append(errs, fmt.Errorf("container %q takes its port from a valueFrom variable (%s): set the annotation %s", e.Container, llamaEnvPort, AnnotationPort))
	}
	if v := ann[AnnotationModel]; v != "" {
		e.Model = v
	}
	if !e.Metrics {
		flag := "--enable-metrics"
		if e.Kind == EngineLlamaCpp {
			flag = "--metrics"
		}
		errs = append(errs, fmt.Errorf("container %q runs %s without %s: the sidecar reads the engine's load from /metrics", e.Container, engineName(e.Kind), flag))
	}
	c := sidecarContainer(o, e)
	for _, p := range portConflicts(spec, &c, e) {
		errs = append(errs, fmt.Errorf("%s; choose other sidecar ports (--data-port, --admin-port, --gossip-port)", p))
	}
	v := gossipKeyVolume(o)
	if v != nil {
		for _, have := range spec.Volumes {
			if have.Name == v.Name {
				errs = append(errs, fmt.Errorf("the pod already has a volume named %q", v.Name))
			}
		}
	}
	if len(errs) > 0 {
		return Decision{}, errors.Join(errs...)
	}
	return Decision{Action: Inject, Engine: e, Container: c, Volume: v,
		Annotations: map[string]string{AnnotationInjected: o.Image},
		Labels:      map[string]string{LabelSidecar: "injected"}}, nil
}

// Apply performs an Inject decision on a typed pod template.
func (d Decision) Apply(meta *metav1.ObjectMeta, spec *corev1.PodSpec) {
	if d.Action != Inject {
		return
	}
	spec.Containers = append(spec.Containers, d.Container)
	if d.Volume != nil {
		spec.Volumes = append(spec.Volumes, *d.Volume)
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		meta.Annotations[k] = v
	}
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	for k, v := range d.Labels {
		meta.Labels[k] = v
	}
}

// String describes the decision for a log or the CLI's report.
func (d Decision) String() string {
	if d.Action == Skip {
		return "skipped: " + d.Reason
	}
	e := d.Engine
	parts := []string{fmt.Sprintf("%s container %q on port %d", e.Kind, e.Container, e.Port)}
	if e.KVEvents != "" {
		parts = append(parts, "KV events "+e.KVEvents)
	} else {
		parts = append(parts, "no KV events (approximate block set)")
	}
	return "injected: " + strings.Join(parts, ", ")
}

// validEngine reports whether kind is an engine kind injection knows.
func validEngine(kind string) bool {
	return kind == EngineVLLM || kind == EngineSGLang || kind == EngineLlamaCpp
}

// engineName is how messages name an engine kind.
func engineName(kind string) string {
	switch kind {
	case EngineSGLang:
		return "SGLang"
	case EngineLlamaCpp:
		return "llama-server"
	}
	return "vLLM"
}
