package epp

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/inferrail/inferrail/internal/openai"
)

// pickMutation is the header mutation that carries a pick: the destination
// list, the rewritten model and, when the body changed, its new length.
func pickMutation(p *Pick) *extprocv3.HeaderMutation {
	m := &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
		headerValue(HeaderDestination, strings.Join(p.Endpoints, ",")),
	}}
	if p.Model != "" {
		m.SetHeaders = append(m.SetHeaders, headerValue(HeaderModelRewrite, p.Model))
	}
	if p.Body != nil {
		m.SetHeaders = append(m.SetHeaders, headerValue("content-length", strconv.Itoa(len(p.Body))))
	}
	m.SetHeaders = append(m.SetHeaders, setMutation(p.Header).GetSetHeaders()...)
	return m
}

// setMutation sets every header of h (names lower-cased, in order).
func setMutation(h map[string]string) *extprocv3.HeaderMutation {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	m := &extprocv3.HeaderMutation{}
	for _, k := range keys {
		m.SetHeaders = append(m.SetHeaders, headerValue(strings.ToLower(k), h[k]))
	}
	return m
}

// headersResponse answers request headers: unchanged (p nil), or with the
// pick. A pick clears the route cache so the gateway routes on the new
// headers.
func headersResponse(p *Pick) *extprocv3.ProcessingResponse {
	hr := &extprocv3.HeadersResponse{}
	if p != nil {
		hr.Response = &extprocv3.CommonResponse{ClearRouteCache: true, HeaderMutation: pickMutation(p)}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: hr}}
}

// bodyResponse answers a buffered body with the pick: the headers (which a
// buffered body's response may still change), the replaced body if any, and
// the destination metadata.
func bodyResponse(p *Pick) *extprocv3.ProcessingResponse {
	cr := &extprocv3.CommonResponse{ClearRouteCache: true, HeaderMutation: pickMutation(p)}
	if p.Body != nil {
		cr.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: p.Body}}
	}
	return &extprocv3.ProcessingResponse{
		Response:        &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: cr}},
		DynamicMetadata: destinationMetadata(p.Endpoints),
	}
}

// streamedBody is one FULL_DUPLEX_STREAMED body chunk sent back, of the
// request or (response set) of the response.
func streamedBody(b []byte, eos, response bool) *extprocv3.ProcessingResponse {
	br := &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{
		Mutation: &extprocv3.BodyMutation_StreamedResponse{StreamedResponse: &extprocv3.StreamedBodyResponse{Body: b, EndOfStream: eos}},
	}}}
	if response {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: br}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: br}}
}

// destinationMetadata is {"envoy.lb": {"x-gateway-destination-endpoint":
// "ip:port,..."}}, the same value as the header.
func destinationMetadata(endpoints []string) *structpb.Struct {
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		MetadataNamespace: structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			HeaderDestination: structpb.NewStringValue(strings.Join(endpoints, ",")),
		}}),
	}}
}

// Refusal is a Picker's refusal for load that says how long to wait:
// answered with Err's status and body and a Retry-After of RetryAfter in
// whole seconds, rounded up, at least 1.
type Refusal struct {
	Err        *openai.Error
	RetryAfter time.Duration
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// immediateResponse answers with e's status and OpenAI error body; a 429 or
// 503 says when to retry: after wait (at least a second).
func immediateResponse(e *openai.Error, wait time.Duration) *extprocv3.ProcessingResponse {
	body, err := json.Marshal(e)
	if err != nil { // cannot happen for the fixed shape
		body = []byte(`{"error":{"message":"internal error","type":"InternalServerError","param":null,"code":500}}`)
	}
	m := &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{headerValue("content-type", "application/json")}}
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		m.SetHeaders = append(m.SetHeaders, headerValue("retry-after", openai.RetryAfter(wait)))
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
		ImmediateResponse: &extprocv3.ImmediateResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode(e.Status)},
			Headers: m,
			Body:    body,
			Details: "inferrail_epp_" + strings.ReplaceAll(strings.ToLower(http.StatusText(e.Status)), " ", "_"),
		},
	}}
}
