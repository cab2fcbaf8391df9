package epp

import (
	"context"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthService is grpc-go's health server whose Watch streams end when the
// Server shuts down (after their NOT_SERVING update), so that a watcher does
// not hold a graceful stop open until its deadline.
type healthService struct{ s *Server }

func (h healthService) Check(ctx context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return h.s.health.Check(ctx, r)
}

func (h healthService) List(ctx context.Context, r *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	return h.s.health.List(ctx, r)
}

func (h healthService) Watch(r *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-h.s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return h.s.health.Watch(r, watchStream{stream, ctx})
}

// watchStream is a Watch stream with a context that also ends at shutdown.
type watchStream struct {
	grpc.ServerStreamingServer[healthpb.HealthCheckResponse]
	ctx context.Context
}

func (w watchStream) Context() context.Context { return w.ctx }

var _ healthpb.HealthServer = healthService{}
