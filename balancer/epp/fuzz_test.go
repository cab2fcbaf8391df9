package epp

import (
	"net"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzParseEndpoints checks that an endpoint list splits into trimmed,
// non-empty entries without commas, that Allows never panics on them, and
// that it allows only an endpoint whose host (or the whole endpoint) the
// list names.
func FuzzParseEndpoints(f *testing.F) {
	for _, s := range []string{"", "10.0.0.1:8000", " a:1 , ,b:2,", "[::1]:80,10.0.0.2", ",,,"} {
		f.Add(s, "10.0.0.1:8000")
	}
	f.Fuzz(func(t *testing.T, list, endpoint string) {
		eps := ParseEndpoints(nil, list)
		for _, e := range eps {
			if e == "" || strings.Contains(e, ",") || strings.TrimSpace(e) != e {
				t.Fatalf("ParseEndpoints(%q) gave %q", list, e)
			}
		}
		s := Subset{Set: true, Endpoints: eps}
		host, _, err := net.SplitHostPort(endpoint)
		if err != nil {
			host = endpoint
		}
		if s.Allows(endpoint) && !strings.Contains(list, host) {
			t.Fatalf("%q allowed by %q", endpoint, list)
		}
	})
}

// FuzzStream drives a stream with message sequences built from the input:
// whatever the data plane sends, in whatever order, the server never panics
// or hangs, and a lease it takes is released exactly once.
func FuzzStream(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 3, 4, 4})
	f.Add([]byte{0x10, 2, 1, 3})
	f.Add([]byte{1, 0, 0, 5, 6})
	f.Add([]byte{0x20, 0, 1, 1, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		var msgs []*extprocv3.ProcessingRequest
		for i, op := range ops {
			var m *extprocv3.ProcessingRequest
			eos := op&0x80 != 0
			switch op & 0x7 {
			case 0:
				m = reqHeaders(nil, eos, ":path", "/v1/completions", ":method", "POST")
			case 1:
				m = reqBody(strings.Repeat("x", int(op>>3)), eos)
			case 2:
				m = &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{}}}
			case 3:
				m = respHeaders("200", "b:1")
			case 4:
				m = respBody("chunk", eos)
			case 5:
				m = &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: &extprocv3.HttpTrailers{}}}
			case 6:
				m = withSubset(&extprocv3.ProcessingRequest{}, structpb.NewStringValue("a:1"))
			default:
				m = &extprocv3.ProcessingRequest{MetadataContext: &corev3.Metadata{}}
			}
			if i == 0 {
				md := extprocfilterv3.ProcessingMode_BodySendMode(int32(op>>4) % 5)
				m.ProtocolConfig = &extprocv3.ProtocolConfiguration{RequestBodyMode: md, ResponseBodyMode: md}
			}
			msgs = append(msgs, m)
		}
		p := &fakePicker{pick: Pick{Endpoints: []string{"a:1", "b:1"}, Body: []byte("{}")}}
		s := New(Config{MaxBodyBytes: 64}, p, nil)
		_ = s.Process(&fakeStream{ctx: t.Context(), in: msgs})
		if p.lease != nil {
			n := 0
			for _, c := range p.lease.calls {
				if c == "done" {
					n++
				}
			}
			if n != 1 || p.lease.calls[len(p.lease.calls)-1] != "done" {
				t.Fatalf("lease calls %v: want exactly one done, last", p.lease.calls)
			}
		}
	})
}
