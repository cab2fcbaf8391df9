package enginesim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/h2c"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/openai"
)

// engineCore is what the front end needs from an engine core (*Engine).
// Every method is safe for concurrent use.
type engineCore interface {
	Submit(r *Request) (*Stream, error)
	// ResetPrefixCache empties the prefix cache; it fails (false) while
	// blocks are in use, as vLLM's does.
	ResetPrefixCache() bool
	// Restart drops every sequence and empties the cache.
	Restart()
}

// rankState is one data-parallel rank as the front end sees it.
type rankState struct {
	rank int
	core engineCore
	// restartEvents restarts the rank's KV-event publisher (nil for none).
	restartEvents func()
	// gapEvents makes the publisher skip the live send of its next n
	// batches (nil for none).
	gapEvents func(n int)
	// cachedHashes lists the router hashes of the rank's cached blocks (nil
	// when unknown).
	cachedHashes func() []kvblock.Hash
	// load reports the engine's occupancy (nil when unknown).
	load func() Load
	// finished lists the engine's last finished requests (nil when
	// unknown).
	finished func() []FinishedRequest
	// inflight counts the requests this front end has on the rank.
	inflight atomic.Int64
}

// frontEnd is the simulator's HTTP server: vLLM's OpenAI-compatible API over
// the engine cores, plus the debug routes that inject faults.
type frontEnd struct {
	cfg      Config
	log      *slog.Logger
	tok      promptTokenizer
	ranks    []*rankState
	gatherer prometheus.Gatherer
	faults   *faultSet
	names    map[string]bool // every model name requests may use
	loras    map[string]bool // the LoRA adapters among them
	routes   map[string]map[string]http.HandlerFunc
	handler  http.Handler

	httpSrv *http.Server
	// afterRequest, when set (tests), is called as each request's handler returns.
	afterRequest func(r *http.Request)

	mu        sync.Mutex // protects the fields below
	ln        net.Listener
	addr      string
	refusing  bool
	reopened  chan struct{}
	conns     map[net.Conn]struct{}
	listening chan struct{} // closed once the first listener is up
}

func newFrontEnd(cfg Config, log *slog.Logger, tok promptTokenizer, ranks []*rankState, gatherer prometheus.Gatherer) *frontEnd {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &frontEnd{
		cfg: cfg, log: log, tok: tok, ranks: ranks, gatherer: gatherer,
		names:     map[string]bool{},
		loras:     map[string]bool{},
		conns:     map[net.Conn]struct{}{},
		listening: make(chan struct{}),
	}
	s.faults = newFaultSet(s)
	for _, n := range cfg.ServedModelName {
		s.names[n] = true
	}
	for _, l := range cfg.LoRAModules {
		s.names[l.Name] = true
		s.loras[l.Name] = true
	}
	s.routes = map[string]map[string]http.HandlerFunc{
		"/v1/chat/completions":      {http.MethodPost: s.handleChat},
		"/v1/completions":           {http.MethodPost: s.handleCompletions},
		"/v1/embeddings":            {http.MethodPost: s.handleEmbeddings},
		"/v1/models":                {http.MethodGet: s.handleModels},
		"/health":                   {http.MethodGet: s.handleHealth},
		"/ping":                     {http.MethodGet: s.handleHealth, http.MethodPost: s.handleHealth},
		"/version":                  {http.MethodGet: s.handleVersion},
		"/metrics":                  {http.MethodGet: s.handleMetrics},
		"/tokenize":                 {http.MethodPost: s.handleTokenize},
		"/detokenize":               {http.MethodPost: s.handleDetokenize},
		"/reset_prefix_cache":       {http.MethodPost: s.handleResetPrefixCache},
		"/inferrail/debug/faults":   {http.MethodGet: s.faults.handleList, http.MethodPost: s.faults.handleAdd, http.MethodDelete: s.faults.handleClear},
		"/inferrail/debug/restart":  {http.MethodPost: s.handleRestart},
		"/inferrail/debug/kv_cache": {http.MethodGet: s.handleKVCache},
		"/inferrail/debug/load":     {http.MethodGet: s.handleLoad},
		"/inferrail/debug/requests": {http.MethodGet: s.handleRequests},
	}
	for _, f := range cfg.Faults {
		s.faults.add(f, nil)
	}
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s
}

// ServeHTTP makes the front end an http.Handler (HTTP/1.1 and h2c).
func (s *frontEnd) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *frontEnd) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.afterRequest != nil {
		defer s.afterRequest(r)
	}
	if s.cfg.EnableRequestIDHeaders {
		id := r.Header.Get("X-Request-Id")
		if id == "" {
			id = randomHex()
		}
		w.Header().Set("X-Request-Id", id)
	}
	if !strings.HasPrefix(r.URL.Path, debugPrefix) {
		if !s.faults.apply(w, r) {
			return
		}
	}
	methods, ok := s.routes[r.URL.Path]
	if !ok {
		openai.RouteNotFound().Write(w)
		return
	}
	h, ok := methods[r.Method]
	if !ok {
		if r.Method == http.MethodHead {
			if h, ok = methods[http.MethodGet]; ok {
				h(w, r)
				return
			}
		}
		openai.MethodNotAllowed().Write(w)
		return
	}
	h(w, r)
}

// randomHex returns a random uuid4-like 32-hex-digit id, as vLLM's random_uuid.
func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

// readBody reads a request body within the size cap.
func (s *frontEnd) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *openai.Error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, openai.StatusError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit))
		}
		return nil, openai.BadRequest("", "read request body: %v", err)
	}
	return body, nil
}

// checkModel resolves the requested model: "" means the served model, an
// unknown name is vLLM's 404.
func (s *frontEnd) checkModel(model string) *openai.Error {
	if model == "" || s.names[model] {
		return nil
	}
	return openai.ModelNotFound(model)
}

// pickRank returns the least loaded rank (fewest in-flight requests; lowest
// rank on ties).
func (s *frontEnd) pickRank() *rankState {
	best := s.ranks[0]
	bestLoad := best.inflight.Load()
	for _, r := range s.ranks[1:] {
		if l := r.inflight.Load(); l < bestLoad {
			best, bestLoad = r, l
		}
	}
	return best
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		openai.Internal("encode response: %v", err).Write(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// listen opens the listener on cfg.Host:cfg.Port.
func (s *frontEnd) listen() error {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.Host, fmt.Sprint(s.cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s.mu.Lock()
	s.ln, s.addr = ln, ln.Addr().String()
	s.mu.Unlock()
	close(s.listening)
	return nil
}

// Addr returns the address the server listens on (after listen).
func (s *frontEnd) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// serve serves HTTP until ctx ends, then shuts down gracefully. A "refuse"
// fault closes the listener; serve waits for it to reopen.
func (s *frontEnd) serve(ctx context.Context) error {
	s.httpSrv = &http.Server{
		Handler:           s,
		Protocols:         h2c.ServerProtocols(), // HTTP/1.1 and h2c with prior knowledge
		ReadHeaderTimeout: 30 * time.Second,
		ConnState:         s.trackConn,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		// Requests outlive ctx: on shutdown they may finish (Shutdown waits
		// up to ShutdownTimeout); a client that leaves still cancels its own.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	errc := make(chan error, 1)
	go func() { errc <- s.serveLoop(ctx) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := s.httpSrv.Shutdown(sctx)
	if err != nil {
		_ = s.httpSrv.Close()
	}
	<-errc
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

func (s *frontEnd) serveLoop(ctx context.Context) error {
	for {
		s.mu.Lock()
		ln := s.ln
		s.mu.Unlock()
		err := s.httpSrv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
			return nil
		}
		s.mu.Lock()
		refusing, reopened := s.refusing, s.reopened
		s.mu.Unlock()
		if !refusing {
			return fmt.Errorf("serve: %w", err)
		}
		select {
		case <-reopened:
		case <-ctx.Done():
			return nil
		}
	}
}

func (s *frontEnd) trackConn(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	}
}

// connKey is the request-context key of the request's connection.
type connKey struct{}

// requestConn returns the connection r arrived on, or nil.
func requestConn(r *http.Request) net.Conn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return c
}

// refuse closes the listener and every open connection except keep (the
// connection of the request that asked for the fault, closed after its
// answer), and reopens the listener on the same address after d.
func (s *frontEnd) refuse(d time.Duration, keep net.Conn) {
	s.mu.Lock()
	if s.refusing || s.ln == nil {
		s.mu.Unlock()
		return
	}
	s.refusing = true
	s.reopened = make(chan struct{})
	_ = s.ln.Close()
	for c := range s.conns {
		if c != keep {
			_ = c.Close()
		}
	}
	addr := s.addr
	s.mu.Unlock()
	s.log.Warn("fault: refusing connections", "duration", d)
	go s.reopenAfter(addr, d)
}

func (s *frontEnd) reopenAfter(addr string, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			s.mu.Lock()
			s.ln, s.refusing = ln, false
			close(s.reopened)
			s.mu.Unlock()
			s.log.Info("fault over: accepting connections again", "addr", addr)
			return
		}
		if attempt == 100 {
			s.log.Error("cannot reopen listener", "addr", addr, "err", err)
			return
		}
		retry := time.NewTimer(50 * time.Millisecond)
		<-retry.C
	}
}
