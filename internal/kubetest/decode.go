// Package kubetest checks, in tests, that YAML and JSON are objects the
// Kubernetes API server accepts: every document decodes strictly into the
// Go types of k8s.io/client-go's scheme, where an unknown or duplicated
// field is an error. Only tests import it, so the inferrail binary does not
// link client-go.
package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"
)

// Scheme is the scheme objects are decoded with: client-go's built-in types.
// Tests may add CRD types to it (AddToScheme) before decoding.
var Scheme = runtime.NewScheme()

func init() {
	if err := scheme.AddToScheme(Scheme); err != nil {
		panic(err)
	}
}

// Object is one decoded document.
type Object struct {
	// GVK is its apiVersion and kind.
	GVK schema.GroupVersionKind
	// Obj is the typed object.
	Obj runtime.Object
	// Name is metadata.name.
	Name string
	// CRD is the strictly decoded custom resource of a kind in CRDKinds
	// (Obj is nil then).
	CRD any
	// YAML is the document.
	YAML []byte
}

// DecodeStrict splits multi-document YAML (or a JSON object) and decodes
// every non-empty document into its Go type, strictly. Every problem is
// reported, each with its document number. The custom resources of
// CRDKinds are decoded by DecodeCRD. Other kinds outside the scheme are
// errors too: pass skipKinds to name the ones a caller checks another way;
// their documents are returned with a nil Obj.
func DecodeStrict(b []byte, skipKinds ...string) ([]Object, error) {
	ser := json.NewSerializerWithOptions(json.DefaultMetaFactory, Scheme, Scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
	skip := map[string]bool{}
	for _, k := range skipKinds {
		skip[k] = true
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []Object
	var errs []error
	for i := 1; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("document %d: %w", i, err)
		}
		var m map[string]any
		if err := doc.Decode(&m); err != nil {
			errs = append(errs, fmt.Errorf("document %d: not a mapping: %w", i, err))
			continue
		}
		if len(m) == 0 {
			continue
		}
		raw, err := yaml.Marshal(&doc)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i, err))
			continue
		}
		js, err := sigsyaml.YAMLToJSON(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i, err))
			continue
		}
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := sigsyaml.Unmarshal(js, &tm); err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i, err))
			continue
		}
		gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
		if skip[tm.Kind] {
			out = append(out, Object{GVK: gvk, Name: tm.Metadata.Name, YAML: raw})
			continue
		}
		if slices.Contains(CRDKinds, tm.Kind) {
			crd, err := DecodeCRD(raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("document %d (%s %s): %w", i, tm.Kind, tm.Metadata.Name, err))
				continue
			}
			out = append(out, Object{GVK: gvk, Name: tm.Metadata.Name, CRD: crd, YAML: raw})
			continue
		}
		obj, _, err := ser.Decode(js, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d (%s %s): %w", i, tm.Kind, tm.Metadata.Name, err))
			continue
		}
		out = append(out, Object{GVK: gvk, Obj: obj, Name: tm.Metadata.Name, YAML: raw})
	}
	return out, errors.Join(errs...)
}
