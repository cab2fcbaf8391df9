package balancer

import (
	"context"
	"fmt"
	"net"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/grpc"

	"github.com/inferrail/inferrail/balancer/epp"
)

// eppServer is the gRPC server of the endpoint-picker mode.
type eppServer struct {
	grpc *grpc.Server
	svc  *epp.Server
	ln   net.Listener
}

// newEPPServer listens on epp.listen and registers the ext_proc and health
// services.
func (b *Balancer) newEPPServer(ctx context.Context) (*eppServer, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", b.cfg.EPP.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", b.cfg.EPP.Listen, err)
	}
	mode := extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	if b.cfg.EPP.BodyMode == EPPBodyBuffered {
		mode = extprocfilterv3.ProcessingMode_BUFFERED
	}
	svc := epp.New(epp.Config{MaxBodyBytes: b.cfg.MaxBodyBytes, DefaultBodyMode: mode},
		&eppPicker{b: b}, b.log.With("component", "epp"))
	// A buffered body arrives in one message: allow it past the default
	// 4 MiB, up to the body cap plus room for the headers.
	g := grpc.NewServer(grpc.MaxRecvMsgSize(int(min(b.cfg.MaxBodyBytes, 1<<30)) + 1<<20))
	svc.Register(g)
	return &eppServer{grpc: g, svc: svc, ln: ln}, nil
}

// stop drains the streams until ctx ends, then closes them.
func (s *eppServer) stop(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
	}
}

// EPPAddr returns the bound endpoint-picker address once Run listens (""
// when the mode is off).
func (b *Balancer) EPPAddr(ctx context.Context) (string, error) {
	if _, _, err := b.Addrs(ctx); err != nil {
		return "", err
	}
	b.readyMu.Lock()
	defer b.readyMu.Unlock()
	return b.eppAddr, nil
}
