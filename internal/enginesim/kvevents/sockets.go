package kvevents

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/inferrail/inferrail/internal/zmtpguard"
)

// endSeq is the replay end marker's sequence frame: -1 as a signed 64-bit
// big-endian integer (vLLM's END_SEQ).
var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// sockets are the ZMQ sockets of one Run.
type sockets struct {
	cancel context.CancelFunc
	pub    zmq4.Socket
	router zmq4.Socket // nil without replay
	wg     sync.WaitGroup
}

// open creates the PUB socket (bound or connected by vLLM's heuristic) and,
// with a replay endpoint, the ROUTER socket (always bound).
func (p *Publisher) open(ctx context.Context) (*sockets, error) {
	// The sockets live until close, not until ctx: close orders the shutdown.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sctx = zmtpguard.WithLimits(sctx, p.guard)
	s := &sockets{cancel: cancel}
	zlog := slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)

	bind := ShouldBind(p.endpoint)
	pctx := sctx
	var watch *connWatch
	opts := []zmq4.Option{zmq4.WithLogger(zlog)}
	if !bind {
		// libzmq connects in the background and reconnects for ever; do the
		// same (see connectLoop) rather than fail after zmq4's ten retries.
		watch = newConnWatch()
		pctx = context.WithValue(sctx, watchKey{}, watch)
		opts = append(opts, zmq4.WithDialerMaxRetries(-1), zmq4.WithDialerRetry(p.retry))
	}
	s.pub = zmq4.NewPub(pctx, opts...)
	if err := s.pub.SetOption(zmq4.OptionHWM, p.cfg.HWM); err != nil {
		s.close()
		return nil, fmt.Errorf("kv events: set hwm %d: %w", p.cfg.HWM, err)
	}
	if bind {
		if err := s.pub.Listen(zmtpguard.Endpoint(listenAddress(p.endpoint))); err != nil {
			s.close()
			return nil, fmt.Errorf("kv events: bind pub socket %s: %w", p.endpoint, err)
		}
	} else {
		s.wg.Go(func() { p.connectLoop(sctx, s.pub, watch) })
	}

	var replayAddr string
	if p.replayEndpoint != "" {
		s.router = zmq4.NewRouter(sctx, zmq4.WithLogger(zlog))
		if err := s.router.Listen(zmtpguard.Endpoint(listenAddress(p.replayEndpoint))); err != nil {
			s.close()
			return nil, fmt.Errorf("kv events: bind replay socket %s: %w", p.replayEndpoint, err)
		}
		replayAddr = boundAddr(s.router, p.replayEndpoint)
	}

	p.ringMu.Lock()
	if bind {
		p.addr = boundAddr(s.pub, p.endpoint)
	}
	p.replayAddr = replayAddr
	p.ringMu.Unlock()
	return s, nil
}

// connectLoop keeps the PUB socket connected to p.endpoint: it dials
// (retrying every p.retry until it succeeds) and dials again p.retry after
// the connection is lost, until ctx is done.
func (p *Publisher) connectLoop(ctx context.Context, pub zmq4.Socket, watch *connWatch) {
	ep := watchEndpoint(p.endpoint)
	for {
		watch.drain()
		if err := pub.Dial(ep); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Error("connect kv events pub socket", "endpoint", p.endpoint, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.retry):
			}
			continue
		}
		p.log.Debug("kv events pub socket connected", "endpoint", p.endpoint)
		select {
		case <-ctx.Done():
			return
		case <-watch.lost:
			p.log.Info("kv events subscriber connection lost; reconnecting", "endpoint", p.endpoint)
		}
		// Pause like libzmq's reconnect interval: a peer that is closing may
		// still accept for a moment, and a connection to it would be lost.
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.retry):
		}
	}
}

// close closes the sockets and waits for their goroutines.
func (s *sockets) close() {
	s.cancel()
	_ = s.pub.Close()
	if s.router != nil {
		_ = s.router.Close()
	}
	s.wg.Wait()
}

// boundAddr names a listening socket's address as an endpoint: the actual
// tcp port (port 0 resolved), or the configured endpoint for ipc/inproc.
func boundAddr(s zmq4.Socket, endpoint string) string {
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		return "tcp://" + a.String()
	}
	return endpoint
}

// serveReplay answers replay requests until the ROUTER socket is closed.
// A request is [identity, "", start_seq]; the answer is one message
// [identity, "", topic, seq, payload] per buffered batch with seq >=
// start_seq, then [identity, "", "", END_SEQ, ""] (vLLM v0.25+ framing).
// Requests with another frame count get no answer.
func (p *Publisher) serveReplay(router zmq4.Socket) {
	for {
		msg, err := router.Recv()
		if err != nil {
			return // closed
		}
		p.m.replayRequests.Inc()
		if len(msg.Frames) != 3 {
			p.warn.Warn("invalid replay request", "frames", len(msg.Frames))
			continue
		}
		id, start := msg.Frames[0], startSeq(msg.Frames[2])

		p.ringMu.Lock()
		entries := p.ring.since(start)
		p.ringMu.Unlock()

		p.log.Debug("replay", "start_seq", start, "batches", len(entries))
		for _, e := range entries {
			if err := router.SendMulti(newMsg(id, nil, p.topic, seqBytes(e.seq), e.payload)); err != nil {
				p.warn.Warn("send replay batch", "seq", e.seq, "err", err)
				break
			}
		}
		if err := router.SendMulti(newMsg(id, nil, nil, endSeq, nil)); err != nil {
			p.warn.Warn("send replay end marker", "err", err)
		}
	}
}

// startSeq reads a replay request's start sequence like Python's
// int.from_bytes(b, "big"): any length, saturating above 2^64-1.
func startSeq(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		if v > math.MaxUint64>>8 {
			return math.MaxUint64
		}
		v = v<<8 | uint64(c)
	}
	return v
}

// seqBytes is seq as 8 bytes big-endian.
func seqBytes(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

// newMsg builds a multipart message; nil frames are sent empty.
func newMsg(frames ...[]byte) zmq4.Msg {
	for i, f := range frames {
		if f == nil {
			frames[i] = []byte{}
		}
	}
	return zmq4.NewMsgFrom(frames...)
}
