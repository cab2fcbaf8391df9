package inject

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PatchOp is one RFC 6902 JSON patch operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// PodPatch plans injection into an admitted pod and returns the JSON patch
// that performs it: nil when the decision is Skip (an injected pod gets an
// empty patch, so admission is idempotent).
func PodPatch(pod *corev1.Pod, o Options) ([]PatchOp, Decision, error) {
	d, err := Plan(pod.ObjectMeta, &pod.Spec, o)
	if err != nil || d.Action != Inject {
		return nil, d, err
	}
	ops := []PatchOp{{Op: "add", Path: "/spec/containers/-", Value: d.Container}}
	if d.Volume != nil {
		if len(pod.Spec.Volumes) == 0 {
			ops = append(ops, PatchOp{Op: "add", Path: "/spec/volumes", Value: []corev1.Volume{*d.Volume}})
		} else {
			ops = append(ops, PatchOp{Op: "add", Path: "/spec/volumes/-", Value: *d.Volume})
		}
	}
	ops = append(ops, mapOps("/metadata/labels", pod.Labels, d.Labels)...)
	ops = append(ops, mapOps("/metadata/annotations", pod.Annotations, d.Annotations)...)
	return ops, d, nil
}

// mapOps sets the keys of add in the string map at path, which holds have.
func mapOps(path string, have, add map[string]string) []PatchOp {
	if len(have) == 0 {
		return []PatchOp{{Op: "add", Path: path, Value: add}}
	}
	var ops []PatchOp
	for _, k := range slices.Sorted(maps.Keys(add)) {
		ops = append(ops, PatchOp{Op: "add", Path: path + "/" + escapePointer(k), Value: add[k]})
	}
	return ops
}

// escapePointer escapes a JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
