package epp

import (
	"net"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// The protocol's names (docs/proposals/004-endpoint-picker-protocol in
// kubernetes-sigs/gateway-api-inference-extension, and its metadata
// constants in pkg/lwepp/metadata/consts.go).
const (
	// HeaderDestination is the request header (and envoy.lb metadata key)
	// naming the picked endpoints, ip:port[,ip:port...].
	HeaderDestination = "x-gateway-destination-endpoint"
	// MetadataNamespace wraps the picked endpoints in the dynamic metadata
	// and the served endpoint in the data plane's metadata context.
	MetadataNamespace = "envoy.lb"
	// SubsetNamespace wraps the data plane's subset hint.
	SubsetNamespace = "envoy.lb.subset_hint"
	// KeySubset lists the endpoints the picker must choose from.
	KeySubset = "x-gateway-destination-endpoint-subset"
	// KeyServed names the endpoint that served the request.
	KeyServed = "x-gateway-destination-endpoint-served"
	// HeaderModelRewrite carries the model name the request is forwarded
	// with when the picker rewrote it (an alias).
	HeaderModelRewrite = "x-gateway-model-name-rewrite"
	// ServiceName is the ext_proc service, also a health service name.
	ServiceName = "envoy.service.ext_proc.v3.ExternalProcessor"
	// HealthLiveness and HealthReadiness are the other health services.
	HealthLiveness  = "liveness"
	HealthReadiness = "readiness"
)

// maxChunk bounds a streamed body chunk sent back to the data plane (the
// 64 KiB Envoy recommends for FULL_DUPLEX_STREAMED).
const maxChunk = 64 << 10

// Subset is the data plane's subset hint: the endpoints a request may go to.
type Subset struct {
	// Set reports whether the hint was given at all; an empty set given is
	// different from none (nothing may be picked).
	Set bool
	// Endpoints are ip:port entries, or bare IPs that allow any port.
	Endpoints []string
}

// Allows reports whether endpoint (ip:port) may be picked: it is in the
// subset, or its host is, bare, and it has a port.
func (s *Subset) Allows(endpoint string) bool {
	if !s.Set {
		return true
	}
	host, port, err := net.SplitHostPort(endpoint)
	bare := err == nil && port != ""
	for _, e := range s.Endpoints {
		if e == endpoint || (bare && e == host) {
			return true
		}
	}
	return false
}

// ParseEndpoints splits a comma list of endpoints, trimming spaces and
// dropping empty entries. Data planes write the subset as a list of strings
// or as one comma-separated string (a header copied into metadata); both
// reach here one string at a time.
func ParseEndpoints(dst []string, s string) []string {
	for len(s) > 0 {
		var e string
		e, s, _ = strings.Cut(s, ",")
		if e = strings.TrimSpace(e); e != "" {
			dst = append(dst, e)
		}
	}
	return dst
}

// subsetOf reads the subset hint from a request's metadata context.
func subsetOf(md *corev3.Metadata) (Subset, bool) {
	ns := md.GetFilterMetadata()[SubsetNamespace]
	v, ok := ns.GetFields()[KeySubset]
	if !ok {
		return Subset{}, false
	}
	s := Subset{Set: true}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		s.Endpoints = ParseEndpoints(s.Endpoints, k.StringValue)
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			s.Endpoints = ParseEndpoints(s.Endpoints, e.GetStringValue())
		}
	}
	return s, true
}

// servedOf reads the served endpoint from a request's metadata context ("":
// none).
func servedOf(md *corev3.Metadata) string {
	v := md.GetFilterMetadata()[MetadataNamespace].GetFields()[KeyServed]
	return strings.TrimSpace(v.GetStringValue())
}
