package epp

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
)

// fakeStream is an ext_proc server stream fed from a list: Recv returns the
// messages in order, then io.EOF; Send records.
type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
	in  []*extprocv3.ProcessingRequest
	out []*extprocv3.ProcessingResponse
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) Recv() (*extprocv3.ProcessingRequest, error) {
	if len(f.in) == 0 {
		return nil, io.EOF
	}
	m := f.in[0]
	f.in = f.in[1:]
	return m, nil
}

func (f *fakeStream) Send(r *extprocv3.ProcessingResponse) error {
	f.out = append(f.out, r)
	return nil
}

// fakePicker answers every request with pick (or err) and records what it
// was asked.
type fakePicker struct {
	mu    sync.Mutex
	pick  Pick
	err   error
	reqs  []Request
	lease *fakeLease
	ready bool
}

func (p *fakePicker) Pick(_ context.Context, r *Request) (*Pick, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := *r
	c.Body = append([]byte(nil), r.Body...)
	if r.Body == nil {
		c.Body = nil
	}
	p.reqs = append(p.reqs, c)
	if p.err != nil {
		return nil, p.err
	}
	pk := p.pick
	p.lease = &fakeLease{}
	pk.Lease = p.lease
	return &pk, nil
}

func (p *fakePicker) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready
}

// fakeLease records the calls in order.
type fakeLease struct{ calls []string }

func (l *fakeLease) Served(endpoint string, status int) map[string]string {
	l.calls = append(l.calls, "served "+endpoint+" "+strconv.Itoa(status))
	return map[string]string{"X-Served-By": endpoint}
}
func (l *fakeLease) Prefilled(bool) { l.calls = append(l.calls, "prefilled") }
func (l *fakeLease) Done()          { l.calls = append(l.calls, "done") }

// run serves one stream of msgs and returns what the server sent.
func run(t *testing.T, p Picker, msgs ...*extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
	t.Helper()
	s := New(Config{MaxBodyBytes: 1 << 20}, p, nil)
	fs := &fakeStream{ctx: t.Context(), in: msgs}
	if err := s.Process(fs); err != nil {
		t.Fatalf("Process: %v", err)
	}
	return fs.out
}

// reqHeaders is a request headers message; eos marks a request without a
// body. The first message of a stream carries the protocol config when mode
// is set.
func reqHeaders(mode *extprocfilterv3.ProcessingMode_BodySendMode, eos bool, kv ...string) *extprocv3.ProcessingRequest {
	var hs []*corev3.HeaderValue
	for i := 0; i+1 < len(kv); i += 2 {
		hs = append(hs, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	m := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: hs}, EndOfStream: eos}}}
	if mode != nil {
		m.ProtocolConfig = &extprocv3.ProtocolConfiguration{RequestBodyMode: *mode, ResponseBodyMode: *mode}
	}
	return m
}

func reqBody(b string, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: []byte(b), EndOfStream: eos}}}
}

func respHeaders(status, served string) *extprocv3.ProcessingRequest {
	m := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
			{Key: ":status", RawValue: []byte(status)}}}}}}
	if served != "" {
		m.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
			MetadataNamespace: {Fields: map[string]*structpb.Value{KeyServed: structpb.NewStringValue(served)}}}}
	}
	return m
}

func respBody(b string, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: []byte(b), EndOfStream: eos}}}
}

// withSubset adds the subset hint to m's metadata context.
func withSubset(m *extprocv3.ProcessingRequest, v *structpb.Value) *extprocv3.ProcessingRequest {
	m.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
		SubsetNamespace: {Fields: map[string]*structpb.Value{KeySubset: v}}}}
	return m
}

// setHeaders returns a header mutation's set headers as a map.
func setHeaders(m *extprocv3.HeaderMutation) map[string]string {
	out := map[string]string{}
	for _, h := range m.GetSetHeaders() {
		out[strings.ToLower(h.GetHeader().GetKey())] = string(h.GetHeader().GetRawValue())
	}
	return out
}

// destination returns the envoy.lb destination metadata of r ("" none).
func destination(r *extprocv3.ProcessingResponse) string {
	return r.GetDynamicMetadata().GetFields()[MetadataNamespace].GetStructValue().GetFields()[HeaderDestination].GetStringValue()
}

func mode(m extprocfilterv3.ProcessingMode_BodySendMode) *extprocfilterv3.ProcessingMode_BodySendMode {
	return &m
}
