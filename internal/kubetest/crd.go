package kubetest

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// CRDKinds are the custom resources the chart renders, whose Go types are
// not in client-go's scheme. DecodeCRD checks them against the fields of
// their upstream API types, strictly.
var CRDKinds = []string{"Issuer", "Certificate", "ServiceMonitor", "InferencePool", "HTTPRoute"}

// The spec fields the chart uses of each CRD, named as upstream names them:
// cert-manager pkg/apis/certmanager/v1/types_{issuer,certificate}.go;
// prometheus-operator pkg/apis/monitoring/v1/servicemonitor_types.go;
// gateway-api-inference-extension api/v1/inferencepool_types.go;
// gateway-api apis/v1/httproute_types.go. A field the chart would render
// and upstream does not know fails the strict decode.
type (
	crdObject[S any] struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Spec       S                 `json:"spec"`
	}
	objectRef struct {
		Name  string `json:"name"`
		Kind  string `json:"kind,omitempty"`
		Group string `json:"group,omitempty"`
	}
	issuerSpec struct {
		SelfSigned *struct {
			CRLDistributionPoints []string `json:"crlDistributionPoints,omitempty"`
		} `json:"selfSigned,omitempty"`
	}
	certificateSpec struct {
		SecretName  string    `json:"secretName"`
		Duration    string    `json:"duration,omitempty"`
		RenewBefore string    `json:"renewBefore,omitempty"`
		DNSNames    []string  `json:"dnsNames,omitempty"`
		IssuerRef   objectRef `json:"issuerRef"`
	}
	serviceMonitorSpec struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port,omitempty"`
			Path     string `json:"path,omitempty"`
			Interval string `json:"interval,omitempty"`
		} `json:"endpoints"`
	}
	inferencePoolSpec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		TargetPorts []struct {
			Number int32 `json:"number"`
		} `json:"targetPorts"`
		EndpointPickerRef struct {
			Group string `json:"group,omitempty"`
			Kind  string `json:"kind,omitempty"`
			Name  string `json:"name"`
			Port  *struct {
				Number int32 `json:"number"`
			} `json:"port,omitempty"`
			FailureMode string `json:"failureMode,omitempty"`
		} `json:"endpointPickerRef"`
	}
	httpRouteSpec struct {
		ParentRefs []struct {
			Group       string `json:"group,omitempty"`
			Kind        string `json:"kind,omitempty"`
			Namespace   string `json:"namespace,omitempty"`
			Name        string `json:"name"`
			SectionName string `json:"sectionName,omitempty"`
			Port        *int32 `json:"port,omitempty"`
		} `json:"parentRefs,omitempty"`
		Hostnames []string `json:"hostnames,omitempty"`
		Rules     []struct {
			Matches []struct {
				Path *struct {
					Type  string `json:"type,omitempty"`
					Value string `json:"value,omitempty"`
				} `json:"path,omitempty"`
			} `json:"matches,omitempty"`
			BackendRefs []struct {
				Group  string `json:"group,omitempty"`
				Kind   string `json:"kind,omitempty"`
				Name   string `json:"name"`
				Port   *int32 `json:"port,omitempty"`
				Weight *int32 `json:"weight,omitempty"`
			} `json:"backendRefs,omitempty"`
		} `json:"rules,omitempty"`
	}
)

// crdAPIVersions are the versions the chart may render.
var crdAPIVersions = map[string]string{
	"Issuer": "cert-manager.io/v1", "Certificate": "cert-manager.io/v1",
	"ServiceMonitor": "monitoring.coreos.com/v1",
	"InferencePool":  "inference.networking.k8s.io/v1",
	"HTTPRoute":      "gateway.networking.k8s.io/v1",
}

// DecodeCRD decodes one YAML document of a kind in CRDKinds strictly and
// returns the typed value (*crdObject[...]) as any.
func DecodeCRD(doc []byte) (any, error) {
	js, err := sigsyaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, err
	}
	if want, ok := crdAPIVersions[tm.Kind]; !ok || tm.APIVersion != want {
		return nil, fmt.Errorf("%s %s: want apiVersion %q", tm.APIVersion, tm.Kind, want)
	}
	var v any
	switch tm.Kind {
	case "Issuer":
		v = &crdObject[issuerSpec]{}
	case "Certificate":
		v = &crdObject[certificateSpec]{}
	case "ServiceMonitor":
		v = &crdObject[serviceMonitorSpec]{}
	case "InferencePool":
		v = &crdObject[inferencePoolSpec]{}
	case "HTTPRoute":
		v = &crdObject[httpRouteSpec]{}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return v, nil
}
