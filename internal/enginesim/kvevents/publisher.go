package kvevents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/ratelog"
	"github.com/inferrail/inferrail/internal/zmtpguard"
)

// Publisher implements enginesim.KVEventSink. This package does not import
// enginesim, so that the simulator's packages may import it without a cycle;
// sink_test.go checks the implementation.

// batch is one engine step's events, waiting in the queue to be published.
type batch struct {
	gen    uint64 // Restart generation the batch belongs to
	ts     time.Time
	events []Event
}

// Publisher publishes one data-parallel rank's KV-cache events the way vLLM's
// ZmqEventPublisher does. Its KVEventSink methods (BlockStored, BlockRemoved,
// AllBlocksCleared, EndStep) are meant for the engine's step loop: they never
// block and do not keep the caller's slices. Run owns the sockets.
//
// A Publisher whose Config is not Enabled discards everything, and its Run
// only waits for its context.
type Publisher struct {
	cfg     Config
	rank    int
	format  Format
	log     *slog.Logger
	m       *metrics
	enabled bool

	endpoint       string // PUB endpoint for this rank
	replayEndpoint string // ROUTER endpoint for this rank, or ""
	topic          []byte

	queue   chan *batch
	guard   zmtpguard.Limits // bounds what peers send the PUB and ROUTER sockets
	warn    *ratelog.Logger  // for what peers can cause once per message
	retry   time.Duration    // reconnect interval in connect mode (libzmq's default 100 ms)
	running atomic.Bool
	ready   chan struct{} // closed once Run's sockets are up

	mu      sync.Mutex // protects the fields below; taken by the engine's calls
	pending []Event    // events of the current step
	gen     uint64     // bumped by Restart

	ringMu     sync.Mutex // protects the fields below; taken by Run, replay and Restart
	seq        uint64     // next sequence number
	ring       ring       // published batches kept for replay
	skipLive   int        // batches still to number without sending (SkipLive)
	addr       string     // bound PUB endpoint ("" when connecting)
	replayAddr string     // bound ROUTER endpoint ("" without replay)
	socks      *sockets   // the open sockets while Run runs
}

// New returns a Publisher for data-parallel rank rank, publishing payloads in
// format. The endpoints are offset by rank (EndpointForRank). log may be nil;
// metrics are registered on reg when it is not nil (and cfg is Enabled).
func New(cfg Config, rank int, format Format, log *slog.Logger, reg prometheus.Registerer) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	format, err := ParseFormat(string(format))
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{
		cfg:     cfg,
		rank:    rank,
		format:  format,
		log:     log.With("component", "kvevents"),
		enabled: cfg.Enabled(),
		topic:   []byte(cfg.Topic),
		ready:   make(chan struct{}),
		retry:   100 * time.Millisecond,
	}
	if !p.enabled {
		close(p.ready)
		return p, nil
	}
	if p.endpoint, err = EndpointForRank(cfg.Endpoint, rank); err != nil {
		return nil, fmt.Errorf("kv events endpoint: %w", err)
	}
	if p.replayEndpoint, err = EndpointForRank(cfg.ReplayEndpoint, rank); err != nil {
		return nil, fmt.Errorf("kv events replay_endpoint: %w", err)
	}
	if p.m, err = newMetrics(reg, rank); err != nil {
		return nil, err
	}
	p.queue = make(chan *batch, cfg.MaxQueueSize)
	p.warn = ratelog.New(p.log, 10*time.Second)
	p.guard = zmtpguard.Limits{MaxMessageBytes: MaxInboundMessageBytes, OnReject: p.rejectPeer}
	p.ring = newRing(cfg.BufferSteps)
	return p, nil
}

// MaxInboundMessageBytes bounds a message a peer sends the simulator's
// sockets: subscriptions on the PUB socket and replay requests on the ROUTER
// are a few bytes (a topic, an 8-byte sequence number), the ZMTP handshake a
// few dozen.
const MaxInboundMessageBytes = 64 << 10

// rejectPeer reports a connection failed by the ZMTP guard (a message over
// the limit or a handshake that timed out). It runs on zmq4's reader.
func (p *Publisher) rejectPeer(err error) {
	p.m.rejected.Inc()
	p.warn.Warn("kv events peer rejected", "err", err)
}

// Enabled reports whether p publishes (false: every call is discarded).
func (p *Publisher) Enabled() bool { return p.enabled }

// Endpoint returns the PUB endpoint of p's rank: the configured endpoint
// after the data-parallel offset.
func (p *Publisher) Endpoint() string { return p.endpoint }

// ReplayEndpoint returns the replay (ROUTER) endpoint of p's rank, or "".
func (p *Publisher) ReplayEndpoint() string { return p.replayEndpoint }

// Ready returns a channel closed once Run has opened its sockets (at once for
// a disabled Publisher). It stays open if Run fails to open them.
func (p *Publisher) Ready() <-chan struct{} { return p.ready }

// Addr returns the address the PUB socket is bound to: "tcp://host:port"
// with the actual port (useful with port 0), or the configured endpoint for
// ipc and inproc. It is "" before Ready and when the socket connects out.
func (p *Publisher) Addr() string {
	p.ringMu.Lock()
	defer p.ringMu.Unlock()
	return p.addr
}

// ReplayAddr returns the ROUTER socket's bound address like Addr, or "".
func (p *Publisher) ReplayAddr() string {
	p.ringMu.Lock()
	defer p.ringMu.Unlock()
	return p.replayAddr
}

// BlockStored records blocks of one request that became full and cached in
// this step. It copies hashes and tokens.
func (p *Publisher) BlockStored(hashes []uint64, parent *uint64, tokens []uint32, blockSize int, lora string) {
	if !p.enabled {
		return
	}
	e := Event{
		Type:        BlockStored,
		BlockHashes: append([]uint64(nil), hashes...),
		TokenIDs:    append([]uint32(nil), tokens...),
		BlockSize:   blockSize,
		LoRAName:    lora,
	}
	if parent != nil {
		v := *parent
		e.ParentBlockHash = &v
	}
	p.add(e)
}

// BlockRemoved records one evicted block (one event per hash, as vLLM does).
func (p *Publisher) BlockRemoved(hash uint64) {
	if !p.enabled {
		return
	}
	p.add(Event{Type: BlockRemoved, BlockHashes: []uint64{hash}})
}

// AllBlocksCleared records a successful prefix-cache reset.
func (p *Publisher) AllBlocksCleared() {
	if !p.enabled {
		return
	}
	p.add(Event{Type: AllBlocksCleared})
}

func (p *Publisher) add(e Event) {
	p.mu.Lock()
	p.pending = append(p.pending, e)
	p.mu.Unlock()
}

// EndStep closes the step: its events become one batch stamped ts, handed to
// the queue that Run drains. A step without events sends nothing; a full
// queue drops the batch (counted in inferrail_sim_kv_event_dropped_batches_total).
func (p *Publisher) EndStep(ts time.Time) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	if len(p.pending) == 0 {
		p.mu.Unlock()
		return
	}
	b := &batch{gen: p.gen, ts: ts, events: p.pending}
	p.pending = nil
	p.mu.Unlock()
	select {
	case p.queue <- b:
	default:
		p.m.dropped.Inc()
	}
}

// SkipLive makes the next n batches take their sequence numbers and enter
// the replay ring without being sent on the PUB socket: a subscriber sees a
// gap, as after batches dropped at the high-water mark, and can replay them.
// It may be called from any goroutine.
func (p *Publisher) SkipLive(n int) {
	p.ringMu.Lock()
	defer p.ringMu.Unlock()
	p.skipLive += n
}

// Restart imitates an engine restarted with an empty cache: events not yet
// published are dropped, the replay ring is emptied and sequence numbers
// start again at 0. It may be called from any goroutine.
func (p *Publisher) Restart() {
	if !p.enabled {
		return
	}
	p.ringMu.Lock()
	defer p.ringMu.Unlock()
	p.mu.Lock()
	p.pending = nil
	p.gen++
	p.mu.Unlock()
	p.seq = 0
	p.skipLive = 0
	p.ring.reset()
}

// Run opens the PUB socket (and the replay ROUTER socket when configured),
// then publishes queued batches until ctx is done. It returns nil on
// cancellation and an error when a socket cannot be opened. Run may be
// called once.
func (p *Publisher) Run(ctx context.Context) error {
	if !p.enabled {
		<-ctx.Done()
		return nil
	}
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("kv events publisher: Run called twice")
	}
	s, err := p.open(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	p.ringMu.Lock()
	p.socks = s
	p.ringMu.Unlock()
	close(p.ready)
	p.log.Info("publishing kv events", "endpoint", p.endpoint, "bind", ShouldBind(p.endpoint),
		"replay_endpoint", p.replayEndpoint, "format", string(p.format), "topic", p.cfg.Topic)

	if s.router != nil {
		s.wg.Go(func() { p.serveReplay(s.router) })
	}
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return nil
		case b := <-p.queue:
			buf = p.publish(s, b, buf)
		}
	}
}

// publish encodes b and sends it as [topic, seq, payload], then keeps it
// for replay. buf is reused scratch space; publish returns it.
func (p *Publisher) publish(s *sockets, b *batch, buf []byte) []byte {
	buf = AppendBatch(buf[:0], p.format, b.ts, b.events, p.rank)
	payload := append([]byte(nil), buf...)

	p.ringMu.Lock()
	p.mu.Lock()
	stale := b.gen != p.gen
	p.mu.Unlock()
	if stale {
		p.ringMu.Unlock()
		return buf
	}
	seq := p.seq
	p.seq++
	var err error
	if p.skipLive > 0 {
		p.skipLive--
	} else {
		err = s.pub.SendMulti(newMsg(p.topic, seqBytes(seq), payload))
	}
	p.ring.add(entry{seq: seq, payload: payload})
	p.ringMu.Unlock()

	if err != nil {
		p.log.Warn("send kv event batch", "seq", seq, "err", err)
		return buf
	}
	p.m.batches.Inc()
	for i := range b.events {
		if t := b.events[i].Type; t >= BlockStored && t <= AllBlocksCleared {
			p.m.byType[t].Inc()
		}
	}
	return buf
}
