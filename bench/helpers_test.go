package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// pipeListener is an in-memory net.Listener: connections are net.Pipe pairs,
// so a server and client can run inside a testing/synctest bubble, where
// real sockets would stall the fake clock.
type pipeListener struct {
	conns  chan net.Conn
	once   sync.Once
	closed chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.closed:
		return nil, errors.New("listener closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// startPipeServer serves h over an in-memory listener and returns a client
// for it; both stop when the test ends (call inside the synctest bubble).
func startPipeServer(t *testing.T, h http.Handler) *http.Client {
	t.Helper()
	l := newPipeListener()
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	tr := &http.Transport{DialContext: l.dial, MaxIdleConnsPerHost: 1000, DisableCompression: true}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
	})
	return &http.Client{Transport: tr}
}

// streamHandler answers every chat request with a stream of n tokens: the
// first after ttft, then one every itl, then usage and [DONE]. The response
// carries balancer headers naming replica and predicting predicted cached
// tokens; usage reports cached tokens.
type streamHandler struct {
	ttft, itl time.Duration
	tokens    int
	replica   string
	predicted int
	cached    int
	// serial, when set, lets one request run at a time (a server that falls
	// behind).
	serial chan struct{}
}

func (h *streamHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.serial != nil {
		select {
		case h.serial <- struct{}{}:
			defer func() { <-h.serial }()
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set(HeaderReplica, h.replica)
	w.Header().Set(HeaderCachedTokens, fmt.Sprint(h.predicted))
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	f := w.(http.Flusher)
	select { // a client that gives up ends the request
	case <-time.After(h.ttft):
	case <-r.Context().Done():
		return
	}
	for i := range h.tokens {
		if i > 0 {
			select { // a client that stops reading ends the stream
			case <-time.After(h.itl):
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab \"},\"logprobs\":null,\"finish_reason\":null}]}\n\n")
		f.Flush()
	}
	fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"total_tokens\":%d,\"completion_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":%d}}}\n\n", 100+h.tokens, h.tokens, h.cached)
	fmt.Fprint(w, "data: [DONE]\n\n")
	f.Flush()
}

// oneTurnSessions returns n one-turn sessions starting every gap.
func oneTurnSessions(n int, gap time.Duration, maxTokens int) []Session {
	out := make([]Session, n)
	for i := range out {
		out[i] = Session{ID: i, Start: time.Duration(i) * gap, Group: -1,
			Turns: []Turn{{User: strings.Repeat("ab ", 10), MaxTokens: maxTokens}}}
	}
	return out
}

// testConfig is a valid config pointing at the in-memory server.
func testConfig() Config {
	c := DefaultConfig()
	c.Targets = []string{"http://pipe"}
	c.Warmup = 0
	c.Replicas = 2
	c.CacheBlocks = 100
	return c
}
