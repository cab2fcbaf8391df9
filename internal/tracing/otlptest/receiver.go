// Package otlptest is an OTLP/HTTP trace receiver for tests: a net/http
// server that decodes the protobuf ExportTraceServiceRequest of the
// specification (go.opentelemetry.io/proto/otlp) and keeps every span.
package otlptest

import (
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	TraceID, SpanID, ParentID string // lower-case hex; ParentID "" for a root
	Name                      string
	// Kind is the protobuf enum's name: SPAN_KIND_SERVER, SPAN_KIND_CLIENT.
	Kind string
	// Service is the resource's service.name.
	Service string
	// Attrs are the span's attributes, each value printed as a string.
	Attrs map[string]string
	// Error reports a span whose status is STATUS_CODE_ERROR.
	Error bool
}

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	// URL is the receiver's base URL (the traces path is /v1/traces).
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	spans    []Span
	requests int
	bad      []string
}

// Start starts a receiver on loopback; Close stops it.
func Start() *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	return r
}

// Serve starts a receiver on ln (a collector that comes up at an address
// the exporters already use).
func Serve(ln net.Listener) *Receiver {
	r := &Receiver{}
	r.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(r.serve)}}
	r.srv.Start()
	r.URL = r.srv.URL
	return r
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.reject(w, http.StatusNotFound, fmt.Sprintf("%s %s", req.Method, req.URL.Path))
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.reject(w, http.StatusUnsupportedMediaType, "content type "+ct)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.reject(w, http.StatusBadRequest, err.Error())
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &msg); err != nil {
		r.reject(w, http.StatusBadRequest, err.Error())
		return
	}
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = value(kv.GetValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: s.GetKind().String(),
					Service: service, Attrs: map[string]string{}, Error: s.GetStatus().GetCode().String() == "STATUS_CODE_ERROR"}
				for _, kv := range s.GetAttributes() {
					sp.Attrs[kv.GetKey()] = value(kv.GetValue())
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.requests++
	r.mu.Unlock()
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func (r *Receiver) reject(w http.ResponseWriter, status int, why string) {
	r.mu.Lock()
	r.bad = append(r.bad, why)
	r.mu.Unlock()
	http.Error(w, why, status)
}

// Spans returns a copy of every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Rejected returns why each request the receiver refused was refused.
func (r *Receiver) Rejected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	default:
		return v.String()
	}
}
