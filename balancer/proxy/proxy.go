package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/staleconn"
)

// Upstream is where an attempt goes.
type Upstream struct {
	// Base is the upstream's base URL; its path, if any, prefixes the
	// request path.
	Base *url.URL
	// H2C selects HTTP/2 with prior knowledge instead of HTTP/1.1.
	H2C bool
	// APIKey, when set, is sent as "Authorization: Bearer APIKey" in place
	// of the client's credentials (a hosted provider's key).
	APIKey string
	// PathPrefix, when set, replaces the leading /v1 of the request path
	// (a provider serving its OpenAI API under another root, e.g.
	// /openai/v1); a path outside /v1 keeps its path.
	PathPrefix string
}

// path returns the upstream path of a client path p.
func (up Upstream) path(p string) string {
	if up.PathPrefix != "" {
		if rest, ok := strings.CutPrefix(p, "/v1"); ok && (rest == "" || rest[0] == '/') {
			p = strings.TrimSuffix(up.PathPrefix, "/") + rest
		}
	}
	return joinPath(up.Base.Path, p)
}

// Proxy sends attempts and streams responses. It is safe for concurrent use.
type Proxy struct {
	cfg Config
	h1  *http.Transport
	h2c *http.Transport
	// h1Retry sends over h1 and, when a kept-alive HTTP/1.1 connection
	// fails before any response byte (an engine such as llama.cpp closed
	// it while idle), once more on a fresh connection (internal/staleconn).
	h1Retry http.RoundTripper
}

// New returns a proxy with its own connection pools. Its metric,
// inferrail_balancer_upstream_stale_conn_retries_total, is registered on reg
// (nil: none).
func New(cfg Config, reg prometheus.Registerer) *Proxy {
	staleRetries := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "inferrail_balancer_upstream_stale_conn_retries_total",
		Help: "Attempts sent again on a fresh connection because the kept-alive HTTP/1.1 connection to the replica closed before any response byte (an engine such as llama.cpp closed it while idle); not counted as failures.",
	})
	if reg != nil {
		reg.MustRegister(staleRetries)
	}
	p := &Proxy{cfg: cfg, h1: newTransport(cfg, false), h2c: newTransport(cfg, true)}
	fresh := newTransport(cfg, false)
	fresh.DisableKeepAlives = true
	p.h1Retry = &staleconn.Transport{Pooled: p.h1, Fresh: fresh, OnRetry: staleRetries.Inc}
	return p
}

// Close closes idle pooled connections.
func (p *Proxy) Close() {
	p.h1.CloseIdleConnections()
	p.h2c.CloseIdleConnections()
}

func (p *Proxy) transport(up Upstream) http.RoundTripper {
	if up.H2C {
		return p.h2c
	}
	return p.h1Retry
}

// ErrFirstByteTimeout is the cause of an attempt that got no response
// headers within Config.FirstByteTimeout.
var ErrFirstByteTimeout = errors.New("no response headers within the first-byte timeout")

// Send sends one attempt of in to up with body as its body, and returns the
// response once its headers arrived. The attempt is bound to ctx: cancelling
// ctx (the client went away, the deadline passed, the replica went down)
// aborts the upstream request at any point, also while its body streams.
// header holds extra headers to set (x-request-id). A connect failure is a
// *DialError.
//
// accepted, when not nil, is called (at most once, from the transport's
// goroutine) when the upstream answers 102 Processing before its response:
// a sidecar's word that the engine is running the request. From then on the
// first-byte timeout no longer applies: the work is accepted and under way.
func (p *Proxy) Send(ctx context.Context, up Upstream, in *http.Request, body []byte, header http.Header, accepted func()) (*http.Response, error) {
	u := *up.Base
	u.User = nil // credentials in a replica URL are never sent as basic auth
	u.Path = up.path(in.URL.Path)
	u.RawPath = ""
	u.RawQuery = in.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, in.Method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build upstream request: %w", err)
	}
	out.Header = cloneForward(in.Header)
	for k, v := range header {
		out.Header[k] = v
	}
	if up.APIKey != "" {
		out.Header.Del("X-Api-Key")
		out.Header.Set("Authorization", "Bearer "+up.APIKey)
	}
	if fwd := clientIP(in.RemoteAddr); fwd != "" {
		if prior := out.Header.Get("X-Forwarded-For"); prior != "" {
			fwd = prior + ", " + fwd
		}
		out.Header.Set("X-Forwarded-For", fwd)
	}
	if body != nil {
		out.ContentLength = int64(len(body))
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	var timer *time.Timer // the first-byte timeout (nil: none)
	var once sync.Once
	out = out.WithContext(httptrace.WithClientTrace(out.Context(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
			if code == http.StatusProcessing {
				once.Do(func() {
					if timer != nil {
						timer.Stop()
					}
					if accepted != nil {
						accepted()
					}
				})
			}
			return nil
		},
	}))
	if p.cfg.FirstByteTimeout <= 0 {
		return p.transport(up).RoundTrip(out)
	}
	actx, cancel := context.WithCancelCause(out.Context())
	out = out.WithContext(actx)
	g := NewGuard(cancel)
	timer = time.AfterFunc(p.cfg.FirstByteTimeout, func() { g.Cancel(ErrFirstByteTimeout) })
	resp, err := p.transport(up).RoundTrip(out)
	g.Arrived()
	timer.Stop()
	if err == nil && actx.Err() != nil { // cancelled just before the headers came
		resp.Body.Close()
		err = context.Cause(actx)
	}
	if err != nil {
		cause := context.Cause(actx)
		cancel(nil)
		if errors.Is(cause, ErrFirstByteTimeout) && !errors.Is(err, ErrFirstByteTimeout) {
			return nil, fmt.Errorf("%w: %w", ErrFirstByteTimeout, err)
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// Guard cancels an attempt's context only while the attempt waits for its
// response headers: a timer or watcher that fires just after they arrived
// must not break a stream that has started. Safe for concurrent use.
type Guard struct {
	mu     sync.Mutex // protects done
	done   bool
	cancel context.CancelCauseFunc
}

// NewGuard returns a guard over cancel.
func NewGuard(cancel context.CancelCauseFunc) *Guard { return &Guard{cancel: cancel} }

// Cancel cancels the context with cause unless Arrived was called.
func (g *Guard) Cancel(cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done {
		g.cancel(cause)
	}
}

// Arrived marks the headers received: later Cancel calls do nothing.
func (g *Guard) Arrived() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
}

// cancelOnClose releases the attempt's context when the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel(nil)
	return err
}

func joinPath(prefix, p string) string {
	if prefix == "" || prefix == "/" {
		return p
	}
	return strings.TrimSuffix(prefix, "/") + "/" + strings.TrimPrefix(p, "/")
}

func clientIP(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return ""
	}
	return host
}

// Retryable reports whether an attempt that ended with resp or err may be
// retried on another replica: it never reached the upstream (DialError), the
// upstream answered 502, 503 or 504 before any byte went to the client, or
// the attempt was cancelled with a cause the caller marks retryable (the
// replica went down, the first-byte timeout). The caller must also know that
// nothing was written to the client.
func Retryable(resp *http.Response, err error, retryableCauses ...error) bool {
	if err != nil {
		var de *DialError
		if errors.As(err, &de) || errors.Is(err, ErrFirstByteTimeout) {
			return true
		}
		for _, c := range retryableCauses {
			if errors.Is(err, c) {
				return true
			}
		}
		return false
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Stream writes resp to w: status, headers (hop-by-hop ones removed, extra
// set on top) and body, flushing after every read so each server-sent event
// reaches the client as soon as the upstream sends it. It closes resp.Body.
// It returns the body bytes written and the first error: an upstream read
// error, or a client write error (wrapped in ErrClientGone).
func Stream(w http.ResponseWriter, resp *http.Response, extra http.Header) (int64, error) {
	defer resp.Body.Close()
	h := w.Header()
	copyForward(h, resp.Header)
	for k, v := range extra {
		h[k] = v
	}
	if len(resp.Trailer) > 0 {
		names := make([]string, 0, len(resp.Trailer))
		for k := range resp.Trailer {
			names = append(names, k)
		}
		h.Set("Trailer", strings.Join(names, ", "))
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var n int64
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return n, fmt.Errorf("%w: %w", ErrClientGone, werr)
			}
			n += int64(k)
			if ferr := rc.Flush(); ferr != nil {
				return n, fmt.Errorf("%w: %w", ErrClientGone, ferr)
			}
		}
		if rerr == io.EOF {
			for k, v := range resp.Trailer {
				h[k] = v
			}
			return n, nil
		}
		if rerr != nil {
			return n, fmt.Errorf("read upstream body: %w", rerr)
		}
	}
}

// ErrClientGone wraps a failure to write to the client.
var ErrClientGone = errors.New("client gone")

// Probe sends GET path to up and returns nil if it answered 200.
func (p *Proxy) Probe(ctx context.Context, up Upstream, path string) error {
	u := *up.Base
	u.User = nil
	u.Path = joinPath(up.Base.Path, path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", u.Redacted(), err)
	}
	if up.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+up.APIKey)
	}
	resp, err := p.transport(up).RoundTrip(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", u.Redacted(), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: status %d", u.Redacted(), resp.StatusCode)
	}
	return nil
}
