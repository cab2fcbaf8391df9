package sidecar

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/ratelog"
	"github.com/inferrail/inferrail/internal/tracing"
)

// promptObserver receives the prompts of requests the engine accepted (a 2xx
// response), for the approximate block set. It must not block.
type promptObserver interface {
	observePrompt(hashes [][]kvblock.Hash)
}

// proxy is the data path: a reverse proxy to the engine that streams every
// response unbuffered, removes hop-by-hop headers, cancels the engine request
// when the client goes away and counts the work in flight.
//
// It is built on httputil.ReverseProxy, not on the balancer's hand-written
// balancer/proxy (Send and Stream), because the sidecar's leg needs what that
// package leaves out on purpose, and using it would change what the engine
// and the balancer see:
//   - a request body over MaxInspectBytes streams to the engine unread
//     (readPrompt); Send takes the whole body as bytes, which the balancer
//     has already read for routing;
//   - the 102 Processing the balancer waits for is the sidecar's own, written
//     from the handler's goroutine inside RoundTrip (acceptedTrip) when the
//     engine's metrics say the request runs, and the engine's own 1xx
//     responses are passed on; Send only reports a 102 to a callback on the
//     transport's goroutine and forwards no 1xx;
//   - the load report goes out as a trailer the sidecar declares before the
//     engine answers; ReverseProxy adds the engine's announced trailers to
//     that declaration, where Stream, when the engine announces any,
//     replaces the Trailer header with the engine's;
//   - an engine stream cut midway aborts the client's connection
//     (http.ErrAbortHandler), so the balancer sees a failed stream rather
//     than a clean end; Stream returns the error to a caller that decides;
//   - the engine gets X-Forwarded-Host and X-Forwarded-Proto besides
//     X-Forwarded-For (SetXForwarded), as it always has.
//
// What the balancer's proxy adds (dial errors typed for a retry, the
// first-byte timeout, upstream API keys) has no use on one local engine.
type proxy struct {
	cfg     ProxyConfig
	log     *slog.Logger
	warn    *ratelog.Logger // the engine-failure warning, at most once per key a minute (counted in metrics)
	m       *metrics
	rp      *httputil.ReverseProxy
	counts  ledger
	inspect *promptInspector
	// engineStatus returns the load status but the data path's counts
	// (Sidecar.engineStatus; nil: never readable), for the per-response
	// load report.
	engineStatus func() LoadStatus
	// cachedTokens returns the tokens of the prompts' blocks the replica
	// holds as a leading prefix (nil: none are counted as cached).
	cachedTokens func(hashes [][]kvblock.Hash) int
	observe      promptObserver // may be nil
	// prompts counts chat and completions requests the engine accepted (2xx).
	prompts atomic.Int64
	tr      *tracing.Tracer // nil: tracing off
}

// newEngineTransport returns the pooled HTTP/1.1 transport to the engine.
func newEngineTransport(cfg ProxyConfig) *http.Transport {
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               nil, // the engine is local: never through an HTTP proxy
		DialContext:         d.DialContext,
		MaxIdleConns:        cfg.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost: cfg.MaxIdleConnsPerHost,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // forward bytes as the engine sent them
		ForceAttemptHTTP2:   false,
		// A non-nil empty map disables HTTP/2 negotiation: HTTP/1.1 only.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
}

// reqState travels with one request through the reverse proxy.
type reqState struct {
	e      *entry
	w      http.ResponseWriter // for the 102 Processing of accepted work
	origin string              // the balancer that sent it ("" for none or invalid)
	prompt bool                // a chat or completions request
	stream bool                // the request asked for a stream
	// counted, when not nil, is closed once the prompt's count (below) is
	// in: tokenizing runs beside the forwarding (countPrompt), and what
	// reads the count waits for it (waitCounted).
	counted chan struct{}
	hashes  [][]kvblock.Hash
	// tokens and cached are the prompt tokens and those the replica holds.
	tokens, cached int
}

// waitCounted returns once the prompt's count is in.
func (st *reqState) waitCounted() {
	if st.counted != nil {
		<-st.counted
	}
}

type reqStateKey struct{}

func newProxy(target *url.URL, cfg ProxyConfig, tr http.RoundTripper, inspect *promptInspector, observe promptObserver, log *slog.Logger, m *metrics) *proxy {
	p := &proxy{cfg: cfg, log: log, warn: ratelog.New(log, time.Minute), m: m, inspect: inspect, observe: observe}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport:      prefillTransport{next: tr, counts: &p.counts},
		FlushInterval:  -1, // flush every write: SSE frames go out as they come
		ErrorHandler:   p.upstreamError,
		ModifyResponse: p.responseStarted,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return p
}

// prefillTransport ends a request's prefill when the engine's response
// headers arrive, unless the response is a stream of tokens: then its
// prefill ends at the first token-bearing event (DataPathCounts). A failed
// round trip ends it too.
type prefillTransport struct {
	next   http.RoundTripper
	counts *ledger
}

func (t prefillTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	st, ok := r.Context().Value(reqStateKey{}).(*reqState)
	if !ok {
		return t.next.RoundTrip(r)
	}
	var resp *http.Response
	var err error
	if st.prompt && !st.stream && st.origin != "" {
		resp, err = t.acceptedTrip(r, st)
	} else {
		resp, err = t.next.RoundTrip(r)
	}
	if err != nil || !st.stream || resp.StatusCode/100 != 2 || !openai.IsEventStream(resp.Header) {
		t.counts.prefilled(st.e)
		return resp, err
	}
	e := st.e
	resp.Body = &openai.FirstTokenReader{R: resp.Body, OnFirstToken: func() { t.counts.firstToken(e) }}
	return resp, nil
}

// acceptedTrip is RoundTrip for a non-streaming request from a balancer:
// when the engine reports the request running before its response, the
// balancer is told with a 102 Processing informational response, so that it
// neither times the work out nor moves it. It runs on the handler's
// goroutine (ReverseProxy calls RoundTrip there), so writing the 1xx is safe.
func (t prefillTransport) acceptedTrip(r *http.Request, st *reqState) (*http.Response, error) {
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := t.next.RoundTrip(r)
		done <- result{resp, err}
	}()
	select {
	case res := <-done:
		return res.resp, res.err
	case <-t.counts.acceptance(st.e):
		st.w.WriteHeader(http.StatusProcessing)
		res := <-done
		return res.resp, res.err
	}
}

// ServeHTTP forwards one request to the engine.
func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := &reqState{w: w}
	if p.tr != nil && traced(r) { // the sidecar's span (observability.go)
		sw, tr, end := p.traceRequest(w, r)
		w, r, st.w = sw, tr, sw
		defer end(st)
	}
	if o := r.Header.Get(load.Origin); load.ValidOrigin(o) {
		st.origin = o
	}
	r.Header.Del(load.Origin)
	st.e = p.counts.admit(st.origin, false)
	defer p.counts.finish(st.e)
	defer st.waitCounted() // before finish: a count never lands after it

	if r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/completions") {
		st.prompt = true
		if err := p.readPrompt(r, st, r.URL.Path == "/v1/chat/completions"); err != nil {
			p.m.proxyRequests.WithLabelValues("client_error").Inc()
			openai.BadRequest("", "read request body: %v", err).Write(w)
			return
		}
	}
	if st.origin != "" {
		// The report's trailer is filled in when the response ends.
		w.Header().Set("Trailer", load.Header)
	}
	ctx := context.WithValue(r.Context(), reqStateKey{}, st)
	p.rp.ServeHTTP(w, r.WithContext(ctx))
	st.waitCounted()
	if st.origin != "" {
		w.Header().Set(load.Header, p.headerReport(st.origin))
	}
}

// readPrompt reads a small enough body, learns from it what the forwarding
// needs (whether it streams), puts it back for forwarding byte for byte and
// starts counting its prompt (countPrompt). A body larger than
// MaxInspectBytes is streamed unread and counted as untokenized.
//
// Tokenizing runs beside the forwarding, not before it: the engine gets the
// body as soon as it is read, and tokenizes it itself meanwhile, so a long
// cold prompt's tokenizing (milliseconds with a real tokenizer) is not
// spent twice on the way to its first token. What reads the count (the
// response's load report, the approximate block set, the span) waits for it
// (reqState.waitCounted); the engine's own tokenizing makes that wait short
// or none. Until the count is in, the request is in flight and prefilling
// with no tokens.
func (p *proxy) readPrompt(r *http.Request, st *reqState, chat bool) error {
	if r.ContentLength > p.cfg.MaxInspectBytes {
		p.m.promptsUntokenized.WithLabelValues("too_large").Inc()
		return nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, p.cfg.MaxInspectBytes+1))
	if err != nil {
		return err
	}
	if int64(len(head)) > p.cfg.MaxInspectBytes {
		r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		p.m.promptsUntokenized.WithLabelValues("too_large").Inc()
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(head))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(head)), nil }
	r.ContentLength = int64(len(head))
	req, ok := parsePrompt(head)
	if !ok {
		p.m.promptsUntokenized.WithLabelValues("unparsed").Inc()
		return nil
	}
	st.stream = req.Stream
	p.counts.setStream(st.e, st.stream)
	if !p.inspect.slow() {
		p.countPrompt(st, &req, head, chat)
		return nil
	}
	st.counted = make(chan struct{})
	go func() {
		defer close(st.counted)
		defer func() { // as net/http recovers a handler's panic
			if v := recover(); v != nil {
				p.m.promptsUntokenized.WithLabelValues("unparsed").Inc()
				p.log.Error("counting a prompt panicked", "panic", v)
			}
		}()
		p.countPrompt(st, &req, head, chat)
	}()
	return nil
}

// countPrompt counts the prompt of a body parsePrompt read as req into the
// ledger and st.
func (p *proxy) countPrompt(st *reqState, req *promptBody, body []byte, chat bool) {
	info, ok := p.inspect.count(req, body, chat)
	switch {
	case !ok:
		p.m.promptsUntokenized.WithLabelValues("unparsed").Inc()
	case info.noHashes != "":
		p.m.promptsUntokenized.WithLabelValues(info.noHashes).Inc()
	}
	st.hashes = info.hashes
	prefill := info.tokens
	if p.cachedTokens != nil && st.hashes != nil {
		st.cached = p.cachedTokens(st.hashes)
		prefill = max(info.tokens-st.cached, len(st.hashes))
	}
	st.tokens = info.tokens
	p.counts.addTokens(st.e, int64(info.tokens), int64(prefill))
}

type readCloser struct {
	io.Reader
	io.Closer
}

// responseStarted runs when the engine's headers arrive.
func (p *proxy) responseStarted(resp *http.Response) error {
	p.m.proxyRequests.WithLabelValues(strconv.Itoa(resp.StatusCode / 100 * 100)).Inc()
	st, ok := resp.Request.Context().Value(reqStateKey{}).(*reqState)
	if ok {
		st.waitCounted()
	}
	if ok && st.origin != "" {
		resp.Header.Set(load.Header, p.headerReport(st.origin))
	}
	if !ok || !st.prompt || resp.StatusCode/100 != 2 {
		return nil
	}
	p.prompts.Add(1)
	if p.observe != nil && st.hashes != nil {
		p.observe.observePrompt(st.hashes)
	}
	return nil
}

// upstreamError answers a request the engine could not take: an
// OpenAI-shaped 502, or nothing at all for a client that already left.
func (p *proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil || errors.Is(err, context.Canceled) {
		p.m.proxyRequests.WithLabelValues("client_gone").Inc()
		return
	}
	p.m.proxyRequests.WithLabelValues("upstream_error").Inc()
	p.warn.Warn("engine request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	// vLLM's body shape, typed with the HTTP phrase as FastAPI types its
	// own errors, like the balancer's 502s.
	openai.StatusError(http.StatusBadGateway, "the engine is unreachable: "+err.Error()).Write(w)
}
