package balancer

import (
	"context"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestEPPRun serves the picker from Run: health answers, a stream gets its
// pick, and on shutdown health watches end while a stream in progress is
// drained, not cut: the gateway can still report its response and close,
// and only then does Run return.
func TestEPPRun(t *testing.T) {
	cfg := eppTestConfig(newUpstream(t, okHandler).srv.URL)
	cfg.Listen, cfg.Admin, cfg.EPP.Listen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.ShutdownTimeout = time.Minute // a hang guard: the drain ends when the stream does
	b, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	addr, err := b.EPPAddr(ctx)
	if err != nil || addr == "" {
		t.Fatalf("EPPAddr = %q, %v", addr, err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := healthpb.NewHealthClient(conn)
	w, err := h.Watch(t.Context(), &healthpb.HealthCheckRequest{Service: "readiness"})
	if err != nil {
		t.Fatal(err)
	}
	for { // the static replica is healthy from the start
		r, err := w.Recv()
		if err != nil {
			t.Fatalf("watch readiness: %v", err)
		}
		if r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	if r, err := h.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "liveness"}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("liveness %v, %v", r, err)
	}

	s, err := extprocv3.NewExternalProcessorClient(conn).Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	send := func(m *extprocv3.ProcessingRequest) {
		t.Helper()
		if err := s.Send(m); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	send(&extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{
			Headers: []*corev3.HeaderValue{{Key: ":path", RawValue: []byte("/v1/chat/completions")}}}}}})
	send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(chatBody), EndOfStream: true}}})
	for range 2 {
		if _, err := s.Recv(); err != nil {
			t.Fatalf("recv: %v", err)
		}
	}
	rep := b.fleet.Snapshot().Replicas[0]
	if n := rep.Counters.InFlight.Load(); n != 1 {
		t.Fatalf("%d in flight during the stream, want 1", n)
	}

	stop() // shut down with the stream open
	for {  // a health watch sees NOT_SERVING and ends: it does not hold the drain
		r, err := w.Recv()
		if err != nil {
			break
		}
		if r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			t.Fatal("readiness SERVING after shutdown began")
		}
	}
	send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":status", RawValue: []byte("200")}}}, EndOfStream: true}}})
	if r, err := s.Recv(); err != nil || r.GetResponseHeaders() == nil {
		t.Fatalf("after shutdown began: %v, %v; want the stream still answered", r, err)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) with a stream open", err)
	default:
	}
	_ = s.CloseSend()
	if _, err := s.Recv(); err == nil {
		t.Fatal("stream not closed")
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := rep.Counters.InFlight.Load(); n != 0 {
		t.Fatalf("%d in flight after the stream, want 0", n)
	}
}
