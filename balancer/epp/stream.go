package epp

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/inferrail/inferrail/internal/openai"
)

// stream is one ext_proc stream's state: the request as it arrives, the pick,
// and the lease until the response ends.
type stream struct {
	s   *Server
	srv extprocv3.ExternalProcessor_ProcessServer

	// mode and respMode are the request and response body modes: the data
	// plane's protocol_config, else the configured default.
	mode, respMode extprocfilterv3.ProcessingMode_BodySendMode
	observe        bool // observability mode: responses are not sent

	req        Request
	haveHeader bool
	picked     bool // the picker was asked (in streamed mode the headers response waited for it)
	pick       *Pick

	lease     Lease
	prefilled bool
	done      bool
	// sse reports a response streamed as server-sent events, whose prefill
	// ends at its first token-bearing event (first), not its first byte.
	sse   bool
	first openai.FirstToken
}

// errStop ends a stream after an immediate response.
var errStop = errors.New("stream answered")

func (st *stream) run() error {
	for {
		msg, err := st.srv.Recv()
		if err == io.EOF || status.Code(err) == codes.Canceled {
			return nil
		}
		if err != nil {
			return err
		}
		if err := st.handle(msg); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
}

// finish releases the lease when the stream ends before the response did.
func (st *stream) finish() {
	if st.lease != nil && !st.done {
		st.done = true
		st.lease.Done()
	}
}

func (st *stream) handle(msg *extprocv3.ProcessingRequest) error {
	if pc := msg.GetProtocolConfig(); pc != nil {
		st.mode, st.respMode = pc.GetRequestBodyMode(), pc.GetResponseBodyMode()
	}
	st.observe = st.observe || msg.GetObservabilityMode()
	if sub, ok := subsetOf(msg.GetMetadataContext()); ok && !st.picked {
		st.req.Subset = sub
	}
	switch v := msg.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return st.requestHeaders(v.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		return st.requestBody(v.RequestBody)
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return st.requestTrailers()
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return st.responseHeaders(v.ResponseHeaders, servedOf(msg.GetMetadataContext()))
	case *extprocv3.ProcessingRequest_ResponseBody:
		return st.responseBody(v.ResponseBody)
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		st.end()
		return st.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
			ResponseTrailers: &extprocv3.TrailersResponse{}}})
	}
	return nil // a message without a request part (flow control): nothing to answer
}

func (st *stream) streamed() bool {
	return st.mode == extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED
}

func (st *stream) requestHeaders(h *extprocv3.HttpHeaders) error {
	if st.haveHeader {
		return status.Error(codes.InvalidArgument, "request headers sent twice")
	}
	st.haveHeader = true
	st.req.Header = http.Header{}
	for _, hv := range h.GetHeaders().GetHeaders() {
		v := string(hv.GetRawValue())
		if v == "" {
			v = hv.GetValue()
		}
		switch k := strings.ToLower(hv.GetKey()); k {
		case ":method":
			st.req.Method = v
		case ":path":
			st.req.Path = v
		default:
			if !strings.HasPrefix(k, ":") {
				st.req.Header.Add(k, v)
			}
		}
	}
	if h.GetEndOfStream() { // no body: pick now
		return st.decide(false)
	}
	if st.streamed() {
		return nil // the headers response waits for the body: it carries the pick
	}
	return st.send(headersResponse(nil))
}

func (st *stream) requestBody(b *extprocv3.HttpBody) error {
	if !st.haveHeader || st.picked {
		return status.Error(codes.FailedPrecondition, "request body out of order")
	}
	if int64(len(st.req.Body))+int64(len(b.GetBody())) > st.s.cfg.MaxBodyBytes {
		return st.immediate(openai.StatusError(http.StatusRequestEntityTooLarge, "request body too large"), 0)
	}
	st.req.Body = append(st.req.Body, b.GetBody()...)
	if st.streamed() && !b.GetEndOfStream() {
		return nil // buffer until the last chunk
	}
	// The streamed body is complete; BUFFERED sends the whole body at once,
	// BUFFERED_PARTIAL what fits, which is all this request will show.
	return st.decide(true)
}

func (st *stream) requestTrailers() error {
	if st.streamed() && st.haveHeader && !st.picked {
		// Trailers mark the end of a streamed body that had no
		// end_of_stream chunk.
		if err := st.decideStreamed(false); err != nil {
			return err
		}
	}
	return st.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{
		RequestTrailers: &extprocv3.TrailersResponse{}}})
}

// decide picks and answers: with the headers (no body, or streamed mode)
// followed by the body chunks, or with the body response (buffered mode).
func (st *stream) decide(withBody bool) error {
	if !withBody {
		if err := st.pickNow(); err != nil {
			return err
		}
		return st.send(st.pickedHeaders())
	}
	if st.streamed() {
		return st.decideStreamed(true)
	}
	if err := st.pickNow(); err != nil {
		return err
	}
	return st.send(bodyResponse(st.pick))
}

// decideStreamed answers a streamed request once its body is complete: the
// deferred headers response, then the body in chunks, the last marked
// end_of_stream unless trailers follow.
func (st *stream) decideStreamed(eos bool) error {
	if err := st.pickNow(); err != nil {
		return err
	}
	if err := st.send(st.pickedHeaders()); err != nil {
		return err
	}
	body := st.req.Body
	if st.pick.Body != nil {
		body = st.pick.Body
	}
	for {
		n := min(len(body), maxChunk)
		last := n == len(body)
		if err := st.send(streamedBody(body[:n], last && eos, false)); err != nil {
			return err
		}
		if last {
			return nil
		}
		body = body[n:]
	}
}

func (st *stream) pickedHeaders() *extprocv3.ProcessingResponse {
	r := headersResponse(st.pick)
	r.DynamicMetadata = destinationMetadata(st.pick.Endpoints)
	return r
}

// pickNow asks the picker; a refusal is answered at once and stops the
// stream.
func (st *stream) pickNow() error {
	st.picked = true
	p, err := st.s.picker.Pick(st.srv.Context(), &st.req)
	if err != nil {
		var oe *openai.Error
		if !errors.As(err, &oe) {
			st.s.log.Warn("endpoint pick failed", "err", err)
			oe = openai.Internal("%v", err)
		}
		var wait time.Duration
		if r, ok := errors.AsType[*Refusal](err); ok {
			wait = r.RetryAfter
		}
		return st.immediate(oe, wait)
	}
	if len(p.Endpoints) == 0 {
		if p.Lease != nil {
			p.Lease.Done()
		}
		return st.immediate(openai.Unavailable("no endpoint is ready"), 0)
	}
	st.pick, st.lease = p, p.Lease
	return nil
}

func (st *stream) responseHeaders(h *extprocv3.HttpHeaders, served string) error {
	code := 0
	for _, hv := range h.GetHeaders().GetHeaders() {
		v := string(hv.GetRawValue())
		if v == "" {
			v = hv.GetValue()
		}
		switch strings.ToLower(hv.GetKey()) {
		case ":status":
			code, _ = strconv.Atoi(v)
		case "content-type":
			st.sse = strings.HasPrefix(strings.ToLower(v), "text/event-stream")
		}
	}
	var set map[string]string
	if st.lease != nil && !st.done {
		set = st.lease.Served(served, code)
		noBody := st.respMode == extprocfilterv3.ProcessingMode_NONE
		if noBody || h.GetEndOfStream() {
			st.markPrefilled(false)
		}
		if h.GetEndOfStream() {
			st.end()
		}
	}
	hr := &extprocv3.HeadersResponse{}
	if len(set) > 0 {
		hr.Response = &extprocv3.CommonResponse{HeaderMutation: setMutation(set)}
	}
	return st.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: hr}})
}

func (st *stream) responseBody(b *extprocv3.HttpBody) error {
	switch {
	case b.GetEndOfStream():
		st.markPrefilled(false)
	case st.sse:
		if st.first.Feed(b.GetBody()) {
			st.markPrefilled(true)
		}
	case len(b.GetBody()) > 0:
		st.markPrefilled(false)
	}
	if b.GetEndOfStream() {
		st.end()
	}
	if st.respMode == extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
		return st.send(streamedBody(b.GetBody(), b.GetEndOfStream(), true))
	}
	return st.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{
		ResponseBody: &extprocv3.BodyResponse{}}})
}

// markPrefilled settles the lease's pending prefill (once): at a stream's
// first token-bearing event (firstToken), another response's first byte, or
// its end.
func (st *stream) markPrefilled(firstToken bool) {
	if st.lease != nil && !st.prefilled && !st.done {
		st.prefilled = true
		st.lease.Prefilled(firstToken)
	}
}

// end settles the lease at the end of the response.
func (st *stream) end() {
	st.markPrefilled(false)
	st.finish()
}

// immediate answers the request without an upstream and stops the stream;
// a 429 or 503 says to retry after wait (at least a second).
func (st *stream) immediate(e *openai.Error, wait time.Duration) error {
	if err := st.send(immediateResponse(e, wait)); err != nil {
		return err
	}
	return errStop
}

func (st *stream) send(r *extprocv3.ProcessingResponse) error {
	if st.observe {
		return nil
	}
	return st.srv.Send(r)
}

// headerValue is a header set on (replacing any the client sent).
func headerValue(k, v string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD}
}
