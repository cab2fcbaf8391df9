package epp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Picker decides where requests go. It is called concurrently, once per
// stream.
type Picker interface {
	// Pick routes one request from its headers and whole body. An error
	// that is (or wraps) an *openai.Error is sent as an immediate response
	// with its status and JSON body (a 429 or 503 with Retry-After: 1, or a
	// Refusal's wait); any other error as a 500.
	Pick(ctx context.Context, req *Request) (*Pick, error)
	// Ready reports whether some endpoint can take a request (readiness).
	Ready() bool
}

// Request is what the data plane sent about one HTTP request.
type Request struct {
	// Method and Path are the :method and :path pseudo-headers.
	Method, Path string
	// Header holds the request headers, canonicalized (pseudo-headers
	// excluded).
	Header http.Header
	// Body is the whole body (nil when the request has none).
	Body []byte
	// Subset is the data plane's subset hint.
	Subset Subset
}

// Pick is a Picker's answer.
type Pick struct {
	// Endpoints are ip:port, the first the pick and the rest the fallbacks
	// in order; never empty.
	Endpoints []string
	// Body replaces the request body when non-nil (a rewritten model).
	Body []byte
	// Model is the model the request is forwarded with when it was
	// rewritten ("" otherwise), sent as HeaderModelRewrite.
	Model string
	// Header is set on the request forwarded (e.g. x-request-id).
	Header map[string]string
	// Lease settles the pick's counts; nil when there is none.
	Lease Lease
}

// Lease follows a picked request to its end. Its methods are called from
// the request's stream only, so never concurrently; Done is called exactly
// once, the others at most once and before Done.
type Lease interface {
	// Served reports the response's status and the endpoint that served
	// it ("" when the data plane did not say), and returns headers to set on
	// the response (nil: none).
	Served(endpoint string, status int) map[string]string
	// Prefilled reports the end of the request's prefill: a streamed
	// response's first token-bearing event, another response's first body
	// byte, or its headers when the data plane sends no response body.
	// firstToken reports the first of these: the end of an engine step.
	Prefilled(firstToken bool)
	// Done reports the end of the request, answered or not.
	Done()
}

// Config configures a Server.
type Config struct {
	// MaxBodyBytes caps a request body (413 beyond).
	MaxBodyBytes int64
	// DefaultBodyMode is the request body mode assumed when the data plane
	// sends no protocol_config: FULL_DUPLEX_STREAMED or BUFFERED.
	DefaultBodyMode extprocfilterv3.ProcessingMode_BodySendMode
	// HealthInterval is how often readiness is re-read (default 250ms).
	HealthInterval time.Duration
}

// Server is the ext_proc service and the health services.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer
	cfg    Config
	picker Picker
	log    *slog.Logger
	health *health.Server

	closing   chan struct{} // closed when Run ends: health watches end too
	closeOnce sync.Once
}

var _ extprocv3.ExternalProcessorServer = (*Server)(nil)

// New returns a Server asking picker. log may be nil.
func New(cfg Config, picker Picker, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = 250 * time.Millisecond
	}
	if cfg.DefaultBodyMode != extprocfilterv3.ProcessingMode_BUFFERED {
		cfg.DefaultBodyMode = extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	}
	s := &Server{cfg: cfg, picker: picker, log: log, health: health.NewServer(), closing: make(chan struct{})}
	s.health.SetServingStatus(HealthLiveness, healthpb.HealthCheckResponse_SERVING)
	s.setReady(false)
	return s
}

// Register adds the ext_proc and health services to g.
func (s *Server) Register(g *grpc.Server) {
	extprocv3.RegisterExternalProcessorServer(g, s)
	healthpb.RegisterHealthServer(g, healthService{s})
}

// Run keeps readiness in step with the picker until ctx ends, then marks
// every service NOT_SERVING.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.HealthInterval)
	defer t.Stop()
	ready := false
	for {
		if r := s.picker.Ready(); r != ready {
			ready = r
			s.setReady(r)
		}
		select {
		case <-ctx.Done():
			s.health.Shutdown()
			s.closeOnce.Do(func() { close(s.closing) })
			return nil
		case <-t.C:
		}
	}
}

// setReady sets readiness, the ext_proc service's status and the server's
// overall status ("").
func (s *Server) setReady(ready bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ready {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range []string{"", HealthReadiness, ServiceName} {
		s.health.SetServingStatus(name, st)
	}
}

// Process serves one ext_proc stream: one HTTP request.
func (s *Server) Process(srv extprocv3.ExternalProcessor_ProcessServer) error {
	st := &stream{s: s, srv: srv, mode: s.cfg.DefaultBodyMode, respMode: s.cfg.DefaultBodyMode}
	defer st.finish()
	return st.run()
}
