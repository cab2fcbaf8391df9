package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
)

// The protocol's names, spelled here as a data plane spells them
// (docs/epp.md).
const (
	eppDest      = "x-gateway-destination-endpoint"
	eppRewrite   = "x-gateway-model-name-rewrite"
	eppLB        = "envoy.lb"
	eppSubsetNS  = "envoy.lb.subset_hint"
	eppSubsetKey = "x-gateway-destination-endpoint-subset"
	eppServedKey = "x-gateway-destination-endpoint-served"
	eppService   = "envoy.service.ext_proc.v3.ExternalProcessor"
)

// eppStream is one ext_proc stream played the way Envoy plays it.
type eppStream struct {
	t      *testing.T
	s      grpc.BidiStreamingClient[extprocv3.ProcessingRequest, extprocv3.ProcessingResponse]
	cancel context.CancelFunc
	first  bool
	mode   extprocfilterv3.ProcessingMode_BodySendMode
}

func (b *eppBalancer) open(t *testing.T, mode extprocfilterv3.ProcessingMode_BodySendMode) *eppStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s, err := extprocv3.NewExternalProcessorClient(b.conn).Process(ctx)
	if err != nil {
		cancel()
		t.Fatalf("open ext_proc stream: %v", err)
	}
	t.Cleanup(cancel)
	return &eppStream{t: t, s: s, cancel: cancel, first: true, mode: mode}
}

func (s *eppStream) send(m *extprocv3.ProcessingRequest) {
	s.t.Helper()
	if s.first { // the first message carries the filter's protocol config
		m.ProtocolConfig = &extprocv3.ProtocolConfiguration{RequestBodyMode: s.mode, ResponseBodyMode: s.mode}
		s.first = false
	}
	if err := s.s.Send(m); err != nil {
		s.t.Fatalf("send: %v", err)
	}
}

func (s *eppStream) recv() *extprocv3.ProcessingResponse {
	s.t.Helper()
	r, err := s.s.Recv()
	if err != nil {
		s.t.Fatalf("recv: %v", err)
	}
	return r
}

// headers sends the request headers of a POST to path, with the subset hint
// when subset is non-nil.
func (s *eppStream) headers(path string, subset []string, eos bool) {
	m := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
			{Key: ":method", RawValue: []byte("POST")}, {Key: ":path", RawValue: []byte(path)},
			{Key: ":authority", RawValue: []byte("gateway.example")}, {Key: "content-type", RawValue: []byte("application/json")},
			// A client cannot choose its own endpoint: the picker overwrites it.
			{Key: eppDest, RawValue: []byte("192.0.2.1:80")},
		}}, EndOfStream: eos}}}
	if subset != nil {
		var vals []any
		for _, e := range subset {
			vals = append(vals, e)
		}
		l, _ := structpb.NewList(vals)
		m.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
			eppSubsetNS: {Fields: map[string]*structpb.Value{eppSubsetKey: structpb.NewListValue(l)}}}}
	}
	s.send(m)
}

// body sends body in chunks of n bytes, the last with end_of_stream.
func (s *eppStream) body(body string, n int) {
	for i := 0; i < len(body); i += n {
		j := min(i+n, len(body))
		s.send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: []byte(body[i:j]), EndOfStream: j == len(body)}}})
	}
}

// eppPicked is what the picker answered for a request.
type eppPicked struct {
	header, metadata, rewrite, length string
	body                              string // the body the data plane forwards
}

// readPick reads the pick in full duplex mode: the headers response first
// (nothing may come before it), then the body chunks up to end_of_stream.
func (s *eppStream) readPick() eppPicked {
	s.t.Helper()
	r := s.recv()
	h := r.GetRequestHeaders()
	if h == nil {
		s.t.Fatalf("first response %v, want the request headers response", r)
	}
	p := pickedFrom(h.GetResponse(), r)
	p.body = ""
	for {
		r := s.recv()
		sr := r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if sr == nil {
			s.t.Fatalf("response %v, want a streamed body chunk", r)
		}
		p.body += string(sr.GetBody())
		if sr.GetEndOfStream() {
			return p
		}
	}
}

func pickedFrom(cr *extprocv3.CommonResponse, r *extprocv3.ProcessingResponse) eppPicked {
	var p eppPicked
	for _, hv := range cr.GetHeaderMutation().GetSetHeaders() {
		switch v := string(hv.GetHeader().GetRawValue()); strings.ToLower(hv.GetHeader().GetKey()) {
		case eppDest:
			p.header = v
		case eppRewrite:
			p.rewrite = v
		case "content-length":
			p.length = v
		}
	}
	p.metadata = r.GetDynamicMetadata().GetFields()[eppLB].GetStructValue().GetFields()[eppDest].GetStringValue()
	return p
}

// forward does the gateway's part: it sends body to the first endpoint,
// then plays the response back through the stream (headers with the served
// endpoint, the body in chunks, each echoed in full duplex mode) and closes
// it. It returns the headers the picker set on the response.
func (s *eppStream) forward(endpoint, path, body string) map[string]string {
	s.t.Helper()
	resp, err := http.Post("http://"+endpoint+path, "application/json", strings.NewReader(body))
	if err != nil {
		s.t.Fatalf("POST to the picked endpoint %s: %v", endpoint, err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("picked endpoint %s answered %s: %s", endpoint, resp.Status, out)
	}
	s.send(&extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{
			Headers: []*corev3.HeaderValue{{Key: ":status", RawValue: []byte("200")}}}}},
		MetadataContext: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
			eppLB: {Fields: map[string]*structpb.Value{eppServedKey: structpb.NewStringValue(endpoint)}}}},
	})
	r := s.recv()
	if r.GetResponseHeaders() == nil {
		s.t.Fatalf("response %v, want the response headers answer", r)
	}
	set := map[string]string{}
	for _, hv := range r.GetResponseHeaders().GetResponse().GetHeaderMutation().GetSetHeaders() {
		set[strings.ToLower(hv.GetHeader().GetKey())] = string(hv.GetHeader().GetRawValue())
	}
	half := len(out) / 2
	for i, chunk := range []string{string(out[:half]), string(out[half:])} {
		s.send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{Body: []byte(chunk), EndOfStream: i == 1}}})
		r := s.recv().GetResponseBody().GetResponse()
		if s.mode == extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED && string(r.GetBodyMutation().GetStreamedResponse().GetBody()) != chunk {
			s.t.Fatalf("response chunk %d not echoed: %v", i, r)
		}
	}
	s.close()
	return set
}

// close ends the stream as Envoy does when the request is over.
func (s *eppStream) close() {
	_ = s.s.CloseSend()
	for {
		if _, err := s.s.Recv(); err != nil {
			return
		}
	}
}

// immediate reads an immediate response: its status and OpenAI error body.
func (s *eppStream) immediate() (int, string) {
	s.t.Helper()
	r := s.recv()
	ir := r.GetImmediateResponse()
	if ir == nil {
		s.t.Fatalf("response %v, want an immediate response", r)
	}
	return int(ir.GetStatus().GetCode()), string(ir.GetBody())
}
