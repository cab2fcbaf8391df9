package zmtpguard

import (
	"context"
	"net"
	"strings"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// Schemes of the guarded transports, registered with zmq4 at init.
const (
	// SchemeTCP is guarded "tcp".
	SchemeTCP = "inferrail-zmtp-tcp"
	// SchemeIPC is guarded "ipc" (unix sockets).
	SchemeIPC = "inferrail-zmtp-ipc"
)

func init() {
	for scheme, network := range map[string]string{SchemeTCP: "tcp", SchemeIPC: "unix"} {
		if err := zmq4.RegisterTransport(scheme, guarded{network: network, addr: transport.New(network)}); err != nil {
			panic(err)
		}
	}
}

// Endpoint returns the guarded form of a zmq endpoint: "tcp://" and "ipc://"
// become SchemeTCP and SchemeIPC; other endpoints (inproc) are returned as
// given.
func Endpoint(ep string) string {
	if rest, ok := strings.CutPrefix(ep, "tcp://"); ok {
		return SchemeTCP + "://" + rest
	}
	if rest, ok := strings.CutPrefix(ep, "ipc://"); ok {
		return SchemeIPC + "://" + rest
	}
	return ep
}

// Plain returns the usual form of a guarded endpoint (for logs).
func Plain(ep string) string {
	if rest, ok := strings.CutPrefix(ep, SchemeTCP+"://"); ok {
		return "tcp://" + rest
	}
	if rest, ok := strings.CutPrefix(ep, SchemeIPC+"://"); ok {
		return "ipc://" + rest
	}
	return ep
}

// guarded is a net transport whose connections are guarded by the limits in
// the socket's context.
type guarded struct {
	network string
	addr    transport.Transport // zmq4's own, for Addr
}

func (g guarded) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, g.network, addr)
	if err != nil {
		return nil, err
	}
	return Wrap(c, LimitsFrom(ctx)), nil
}

func (g guarded) Listen(ctx context.Context, addr string) (net.Listener, error) {
	ln, err := net.Listen(g.network, addr)
	if err != nil {
		return nil, err
	}
	return Listen(ln, LimitsFrom(ctx)), nil
}

func (g guarded) Addr(ep string) (string, error) { return g.addr.Addr(ep) }
