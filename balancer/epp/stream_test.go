package epp

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/inferrail/inferrail/internal/openai"
)

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hello"}]}`

var (
	fullDuplex = mode(extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
	buffered   = mode(extprocfilterv3.ProcessingMode_BUFFERED)
	noBody     = mode(extprocfilterv3.ProcessingMode_NONE)
)

// TestFullDuplexStreamed sends the body in three chunks as Envoy does in
// FULL_DUPLEX_STREAMED: nothing comes back until the last chunk, then the
// headers response with the pick, then the body.
func TestFullDuplexStreamed(t *testing.T) {
	p := &fakePicker{pick: Pick{Endpoints: []string{"10.0.0.1:8081", "10.0.0.2:8081"}}}
	out := run(t, p,
		reqHeaders(fullDuplex, false, ":method", "POST", ":path", "/v1/chat/completions", "content-type", "application/json"),
		reqBody(chatBody[:10], false), reqBody(chatBody[10:30], false), reqBody(chatBody[30:], true),
		respHeaders("200", "10.0.0.1:8081"), respBody("data: x\n\n", false), respBody("data: [DONE]\n\n", true))
	if len(p.reqs) != 1 {
		t.Fatalf("picker asked %d times, want 1", len(p.reqs))
	}
	r := p.reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" || string(r.Body) != chatBody || r.Header.Get("Content-Type") != "application/json" || r.Subset.Set {
		t.Fatalf("picker got %+v", r)
	}
	if len(out) != 5 {
		t.Fatalf("%d responses, want 5 (headers, body, response headers, two response chunks): %v", len(out), out)
	}
	h := out[0].GetRequestHeaders()
	if h == nil || !h.GetResponse().GetClearRouteCache() {
		t.Fatalf("first response %v, want request headers clearing the route cache", out[0])
	}
	want := "10.0.0.1:8081,10.0.0.2:8081"
	if got := setHeaders(h.GetResponse().GetHeaderMutation())[HeaderDestination]; got != want {
		t.Errorf("destination header %q, want %q", got, want)
	}
	if got := destination(out[0]); got != want {
		t.Errorf("envoy.lb metadata %q, want %q", got, want)
	}
	for _, hv := range h.GetResponse().GetHeaderMutation().GetSetHeaders() {
		if hv.GetAppendAction() != 2 { // OVERWRITE_IF_EXISTS_OR_ADD: a client cannot pick for itself
			t.Errorf("header %s append action %v", hv.GetHeader().GetKey(), hv.GetAppendAction())
		}
	}
	sb := out[1].GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
	if string(sb.GetBody()) != chatBody || !sb.GetEndOfStream() {
		t.Errorf("body response %v, want the whole body with end_of_stream", out[1])
	}
	if rh := out[2].GetResponseHeaders(); rh == nil || setHeaders(rh.GetResponse().GetHeaderMutation())["x-served-by"] != "10.0.0.1:8081" {
		t.Errorf("third response %v, want response headers with the lease's headers", out[2])
	}
	for i, w := range []string{"data: x\n\n", "data: [DONE]\n\n"} {
		sr := out[3+i].GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if string(sr.GetBody()) != w || sr.GetEndOfStream() != (i == 1) {
			t.Errorf("response chunk %d = %v, want %q echoed", i, out[3+i], w)
		}
	}
	if diff := cmp.Diff([]string{"served 10.0.0.1:8081 200", "prefilled", "done"}, p.lease.calls); diff != "" {
		t.Errorf("lease calls (-want +got):\n%s", diff)
	}
}

// TestFullDuplexLargeBody sends back a body over 64 KiB in chunks of at
// most 64 KiB, only the last marked end_of_stream.
func TestFullDuplexLargeBody(t *testing.T) {
	big := `{"model":"m","prompt":"` + strings.Repeat("x", 150<<10) + `"}`
	p := &fakePicker{pick: Pick{Endpoints: []string{"10.0.0.1:8081"}}}
	var msgs []*extprocv3.ProcessingRequest
	msgs = append(msgs, reqHeaders(fullDuplex, false, ":path", "/v1/completions"))
	for i := 0; i < len(big); i += 16 << 10 {
		j := min(i+16<<10, len(big))
		msgs = append(msgs, reqBody(big[i:j], j == len(big)))
	}
	out := run(t, p, msgs...)
	var got strings.Builder
	for i, r := range out[1:] {
		sr := r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if len(sr.GetBody()) > maxChunk {
			t.Errorf("chunk %d has %d bytes", i, len(sr.GetBody()))
		}
		if sr.GetEndOfStream() != (i == len(out)-2) {
			t.Errorf("chunk %d end_of_stream %v", i, sr.GetEndOfStream())
		}
		got.WriteString(string(sr.GetBody()))
	}
	if got.String() != big || len(out) != 4 {
		t.Fatalf("%d responses; body round trip %v", len(out), got.String() == big)
	}
}

// TestBuffered answers the headers at once and the pick with the body
// response, with the rewritten body and its length.
func TestBuffered(t *testing.T) {
	rewritten := `{"model":"base","messages":[]}`
	p := &fakePicker{pick: Pick{Endpoints: []string{"10.0.0.3:8000"}, Body: []byte(rewritten), Model: "base"}}
	out := run(t, p, reqHeaders(buffered, false, ":path", "/v1/chat/completions"), reqBody(`{"model":"alias","messages":[]}`, true),
		respHeaders("200", ""), respBody(`{"id":"x"}`, true))
	if len(out) != 4 {
		t.Fatalf("%d responses, want 4: %v", len(out), out)
	}
	if out[0].GetRequestHeaders() == nil || out[0].GetRequestHeaders().GetResponse() != nil {
		t.Errorf("headers response %v, want an empty one (continue)", out[0])
	}
	br := out[1].GetRequestBody().GetResponse()
	hs := setHeaders(br.GetHeaderMutation())
	if hs[HeaderDestination] != "10.0.0.3:8000" || hs[HeaderModelRewrite] != "base" || hs["content-length"] != "30" {
		t.Errorf("body response headers %v", hs)
	}
	if string(br.GetBodyMutation().GetBody()) != rewritten || destination(out[1]) != "10.0.0.3:8000" {
		t.Errorf("body response %v", out[1])
	}
	if out[3].GetResponseBody() == nil || out[3].GetResponseBody().GetResponse() != nil {
		t.Errorf("response body answer %v, want an empty one in buffered mode", out[3])
	}
	if diff := cmp.Diff([]string{"served  200", "prefilled", "done"}, p.lease.calls); diff != "" {
		t.Errorf("lease calls (-want +got):\n%s", diff)
	}
}

// TestDefaultBodyMode applies Config.DefaultBodyMode when the data plane
// sends no protocol_config.
func TestDefaultBodyMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode extprocfilterv3.ProcessingMode_BodySendMode
		want int // responses before the body arrives
	}{
		{"full duplex", extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED, 0},
		{"buffered", extprocfilterv3.ProcessingMode_BUFFERED, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{MaxBodyBytes: 1 << 20, DefaultBodyMode: tc.mode}, &fakePicker{pick: Pick{Endpoints: []string{"a:1"}}}, nil)
			fs := &fakeStream{ctx: t.Context(), in: []*extprocv3.ProcessingRequest{reqHeaders(nil, false, ":path", "/v1/completions")}}
			if err := s.Process(fs); err != nil {
				t.Fatal(err)
			}
			if len(fs.out) != tc.want {
				t.Fatalf("%d responses to the headers, want %d", len(fs.out), tc.want)
			}
		})
	}
}

// TestNoBody picks on headers that end the stream.
func TestNoBody(t *testing.T) {
	p := &fakePicker{pick: Pick{Endpoints: []string{"10.0.0.1:8081"}}}
	out := run(t, p, reqHeaders(fullDuplex, true, ":method", "GET", ":path", "/v1/models"))
	if len(out) != 1 || destination(out[0]) != "10.0.0.1:8081" || p.reqs[0].Body != nil {
		t.Fatalf("responses %v; picker got %+v", out, p.reqs)
	}
	if diff := cmp.Diff([]string{"done"}, p.lease.calls); diff != "" {
		t.Errorf("lease calls when the stream ends without a response (-want +got):\n%s", diff)
	}
}

// TestImmediate answers refusals with the picker's status and OpenAI error
// body, and stops the stream; a 429 or 503 says when to retry: a second, or
// a Refusal's wait in whole seconds, rounded up.
func TestImmediate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		retryAfter string
	}{
		{"unavailable", openai.Unavailable("no healthy replica serves m"), 503, "1"},
		{"full", openai.StatusError(http.StatusTooManyRequests, "full"), 429, "1"},
		{"shed", &Refusal{Err: openai.StatusError(http.StatusTooManyRequests, "too loaded"), RetryAfter: 2300 * time.Millisecond}, 429, "3"},
		{"shed soon", &Refusal{Err: openai.StatusError(http.StatusTooManyRequests, "too loaded"), RetryAfter: 200 * time.Millisecond}, 429, "1"},
		{"bad request", openai.BadRequest("model", "model is required"), 400, ""},
		{"wrapped", errors.Join(errors.New("x"), openai.ModelNotFound("q")), 404, ""},
		{"other error", errors.New("boom"), 500, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePicker{err: tc.err}
			out := run(t, p, reqHeaders(fullDuplex, false, ":path", "/v1/chat/completions"), reqBody(chatBody, true),
				respHeaders("200", "")) // never read: the stream stopped
			if len(out) != 1 {
				t.Fatalf("%d responses, want 1", len(out))
			}
			ir := out[0].GetImmediateResponse()
			if int(ir.GetStatus().GetCode()) != tc.status {
				t.Fatalf("immediate response %v, want status %d", out[0], tc.status)
			}
			e, ok := openai.ParseError(ir.GetBody())
			if !ok || e.Status != tc.status {
				t.Errorf("body %s is not an OpenAI error with code %d", ir.GetBody(), tc.status)
			}
			hs := setHeaders(ir.GetHeaders())
			if hs["content-type"] != "application/json" || hs["retry-after"] != tc.retryAfter {
				t.Errorf("headers %v, want retry-after %q", hs, tc.retryAfter)
			}
		})
	}
}

// TestBodyTooLarge answers 413 past MaxBodyBytes without asking the picker.
func TestBodyTooLarge(t *testing.T) {
	p := &fakePicker{pick: Pick{Endpoints: []string{"a:1"}}}
	s := New(Config{MaxBodyBytes: 10}, p, nil)
	fs := &fakeStream{ctx: t.Context(), in: []*extprocv3.ProcessingRequest{
		reqHeaders(fullDuplex, false, ":path", "/v1/completions"), reqBody("0123456", false), reqBody("789ab", true)}}
	if err := s.Process(fs); err != nil {
		t.Fatal(err)
	}
	if len(fs.out) != 1 || fs.out[0].GetImmediateResponse().GetStatus().GetCode() != 413 || len(p.reqs) != 0 {
		t.Fatalf("responses %v, picker asked %d times", fs.out, len(p.reqs))
	}
}

// TestSubset reads the subset hint as a list or a comma string, and tells an
// empty hint from none.
func TestSubset(t *testing.T) {
	list, _ := structpb.NewList([]any{"10.0.0.1:8081", " 10.0.0.2:8081 ,10.0.0.3"})
	for _, tc := range []struct {
		name string
		v    *structpb.Value
		want Subset
	}{
		{"list", structpb.NewListValue(list), Subset{Set: true, Endpoints: []string{"10.0.0.1:8081", "10.0.0.2:8081", "10.0.0.3"}}},
		{"comma string", structpb.NewStringValue("10.0.0.1:8081, 10.0.0.2:8081"), Subset{Set: true, Endpoints: []string{"10.0.0.1:8081", "10.0.0.2:8081"}}},
		{"empty", structpb.NewStringValue(""), Subset{Set: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePicker{pick: Pick{Endpoints: []string{"a:1"}}}
			run(t, p, withSubset(reqHeaders(fullDuplex, false, ":path", "/v1/completions"), tc.v), reqBody("{}", true))
			if diff := cmp.Diff(tc.want, p.reqs[0].Subset); diff != "" {
				t.Errorf("subset (-want +got):\n%s", diff)
			}
		})
	}
	s := Subset{Set: true, Endpoints: []string{"10.0.0.1:8081", "10.0.0.3"}}
	for ep, want := range map[string]bool{"10.0.0.1:8081": true, "10.0.0.1:8000": false, "10.0.0.3:1": true, "10.0.0.2:8081": false, "[10.0.0.3]:": false} {
		if got := s.Allows(ep); got != want {
			t.Errorf("Allows(%s) = %v, want %v", ep, got, want)
		}
	}
	if !(&Subset{}).Allows("x:1") || (&Subset{Set: true}).Allows("x:1") {
		t.Error("no hint must allow everything and an empty hint nothing")
	}
}

// TestResponseHeadersOnly settles the first byte at the response headers
// when the data plane sends no response body, and ends at the stream's end.
func TestResponseHeadersOnly(t *testing.T) {
	p := &fakePicker{pick: Pick{Endpoints: []string{"a:1", "b:1"}}}
	m := reqHeaders(nil, false, ":path", "/v1/completions")
	m.ProtocolConfig = &extprocv3.ProtocolConfiguration{RequestBodyMode: *buffered, ResponseBodyMode: *noBody}
	run(t, p, m, reqBody("{}", true), respHeaders("503", "b:1"))
	if diff := cmp.Diff([]string{"served b:1 503", "prefilled", "done"}, p.lease.calls); diff != "" {
		t.Errorf("lease calls (-want +got):\n%s", diff)
	}
}

// TestTrailers ends a streamed body at the request trailers.
func TestTrailers(t *testing.T) {
	p := &fakePicker{pick: Pick{Endpoints: []string{"a:1"}}}
	out := run(t, p, reqHeaders(fullDuplex, false, ":path", "/v1/completions"), reqBody("{}", false),
		&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{}}})
	if len(out) != 3 || out[0].GetRequestHeaders() == nil || out[2].GetRequestTrailers() == nil {
		t.Fatalf("responses %v", out)
	}
	if sr := out[1].GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse(); string(sr.GetBody()) != "{}" || sr.GetEndOfStream() {
		t.Errorf("body %v, want {} without end_of_stream (trailers follow)", out[1])
	}
}

// TestObservabilityMode sends nothing back.
func TestObservabilityMode(t *testing.T) {
	p := &fakePicker{pick: Pick{Endpoints: []string{"a:1"}}}
	h := reqHeaders(buffered, false, ":path", "/v1/completions")
	h.ObservabilityMode = true
	if out := run(t, p, h, reqBody("{}", true)); len(out) != 0 {
		t.Fatalf("observability mode got %d responses", len(out))
	}
}

// TestOutOfOrder rejects a body before the headers as a stream error.
func TestOutOfOrder(t *testing.T) {
	s := New(Config{MaxBodyBytes: 1 << 20}, &fakePicker{}, nil)
	fs := &fakeStream{ctx: t.Context(), in: []*extprocv3.ProcessingRequest{reqBody("{}", true)}}
	if err := s.Process(fs); err == nil {
		t.Fatal("a body before the headers was accepted")
	}
}
