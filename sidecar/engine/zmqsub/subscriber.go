package zmqsub

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/inferrail/inferrail/internal/ratelog"
	"github.com/inferrail/inferrail/internal/zmtpguard"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// UpdateKind says what an Update asks of its consumer.
type UpdateKind int

// Update kinds.
const (
	// UpdateBatch carries the rank's next batch, in sequence order.
	UpdateBatch UpdateKind = iota
	// UpdateRestart: the rank's publisher restarted; clear the rank (the new
	// engine process starts with an empty cache).
	UpdateRestart
	// UpdateIncomplete: batches of the rank were lost for good; clear the rank
	// and mark it incomplete (blocks stored before the loss are unknown).
	UpdateIncomplete
)

// String returns "batch", "restart" or "incomplete".
func (k UpdateKind) String() string {
	switch k {
	case UpdateBatch:
		return "batch"
	case UpdateRestart:
		return "restart"
	case UpdateIncomplete:
		return "incomplete"
	}
	return "unknown"
}

// Update is one item of a Subscriber's feed.
type Update struct {
	// Kind of update.
	Kind UpdateKind
	// Rank is the global data-parallel rank.
	Rank int
	// Batch is set for UpdateBatch (Batch.Rank = Rank, Batch.Seq its seq).
	Batch engine.Batch
	// Replayed reports a batch that came from the replay socket.
	Replayed bool
}

// Decoder decodes one payload; engine adapters' DecodeBatch fits.
type Decoder func(payload []byte) (engine.Batch, error)

// Subscriber subscribes to every rank's KV events. Create it with New, read
// Updates while Run runs.
type Subscriber struct {
	cfg     Config
	decode  Decoder
	log     *slog.Logger
	m       *metrics
	updates chan Update
}

// New returns a Subscriber. log and reg may be nil.
func New(cfg Config, decode Decoder, log *slog.Logger, reg prometheus.Registerer) (*Subscriber, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if decode == nil {
		return nil, errors.New("zmqsub: nil decoder")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Subscriber{
		cfg:     cfg,
		decode:  decode,
		log:     log,
		m:       newMetrics(reg),
		updates: make(chan Update, cfg.Buffer),
	}, nil
}

// Updates returns the feed. Per rank, updates arrive in order; ranks
// interleave. It is closed when Run returns. The consumer must keep reading:
// a batch that waits longer than DeliverTimeout is dropped and recovered as a
// gap, while restart and incomplete updates wait for room.
func (s *Subscriber) Updates() <-chan Update { return s.updates }

// Run subscribes to every rank until ctx is cancelled, reconnecting on
// errors. It returns nil on cancellation.
func (s *Subscriber) Run(ctx context.Context) error {
	defer close(s.updates)
	g, ctx := errgroup.WithContext(ctx)
	for i := range s.cfg.Ranks {
		r := &rankSub{s: s, rank: s.cfg.FirstRank + i}
		r.warn = ratelog.New(r.log(), logEvery)
		g.Go(func() error { return r.run(ctx) })
	}
	return g.Wait()
}

// logEvery is the least time between two log lines of one kind per rank.
const logEvery = 10 * time.Second

// rankSub is one rank's subscription; its fields are owned by its goroutine.
type rankSub struct {
	s    *Subscriber
	rank int
	seq  seqState
	// warn logs what a publisher can cause once per message (restarts,
	// gaps, undecodable batches) at most once per logEvery per message.
	warn *ratelog.Logger
	// probeRestart is set when a session starts after an earlier one had
	// received messages: a gap in its first message may hide a publisher
	// restart (on the same host, a dropped connection usually means the
	// engine restarted).
	probeRestart bool
}

func (r *rankSub) log() *slog.Logger { return r.s.log.With("rank", r.rank) }

func (r *rankSub) run(ctx context.Context) error {
	cfg := r.s.cfg
	ep := cfg.endpoint(cfg.BasePort, r.rank)
	failures := 0
	for ctx.Err() == nil {
		err := r.session(ctx, ep, &failures)
		if ctx.Err() != nil {
			break
		}
		r.s.m.reconnects.WithLabelValues(strconv.Itoa(r.rank)).Inc()
		d := backoff(cfg.ReconnectMin, cfg.ReconnectMax, failures)
		// An engine takes minutes to start: warn once per outage.
		level := slog.LevelWarn
		if failures > 0 {
			level = slog.LevelDebug
		}
		failures++
		r.log().Log(ctx, level, "kv event subscription failed", "endpoint", ep, "retry_in", d, "attempt", failures, "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return nil
}

// backoff returns min·2^n capped at max, with ±20% jitter.
func backoff(lo, hi time.Duration, n int) time.Duration {
	d := lo
	for range min(n, 30) {
		if d >= hi/2 {
			d = hi
			break
		}
		d *= 2
	}
	d = min(d, hi)
	j := time.Duration(rand.Int64N(int64(d)/5 + 1))
	if rand.IntN(2) == 0 {
		return d - j
	}
	return d + j
}

// session connects once and reads until an error.
func (r *rankSub) session(ctx context.Context, ep string, failures *int) error {
	cfg := r.s.cfg
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub := zmq4.NewSub(zmtpguard.WithLimits(ctx, r.limits()), zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(cfg.DialTimeout),
		zmq4.WithAutomaticReconnect(false), zmq4.WithLogger(discardLogger()))
	defer sub.Close()
	if err := sub.SetOption(zmq4.OptionSubscribe, cfg.Topic); err != nil {
		return fmt.Errorf("subscribe %q: %w", cfg.Topic, err)
	}
	if err := sub.Dial(zmtpguard.Endpoint(ep)); err != nil {
		return fmt.Errorf("dial %s: %w", ep, err)
	}
	r.log().Info("kv events connected", "endpoint", ep)
	r.probeRestart = r.seq.liveSeen
	defer func() { r.probeRestart = false }()
	rank := strconv.Itoa(r.rank)
	r.s.m.connected.WithLabelValues(rank).Set(1)
	defer r.s.m.connected.WithLabelValues(rank).Set(0)
	for {
		msg, err := sub.Recv()
		if err != nil {
			return fmt.Errorf("receive from %s: %w", ep, err)
		}
		*failures = 0
		if len(msg.Frames) != 3 || len(msg.Frames[1]) != 8 || !bytes.HasPrefix(msg.Frames[0], []byte(cfg.Topic)) {
			r.s.m.malformed.WithLabelValues(rank).Inc()
			continue
		}
		if err := r.live(ctx, binary.BigEndian.Uint64(msg.Frames[1]), msg.Frames[2]); err != nil {
			return err
		}
		r.probeRestart = false
	}
}

// limits bounds what the engine's sockets may send one connection: a message
// over MaxMessageBytes, or a handshake longer than DialTimeout, fails it
// (the error then comes back from Recv or Dial).
func (r *rankSub) limits() zmtpguard.Limits {
	rejected := r.s.m.rejected.WithLabelValues(strconv.Itoa(r.rank))
	return zmtpguard.Limits{
		MaxMessageBytes:  r.s.cfg.MaxMessageBytes,
		HandshakeTimeout: r.s.cfg.DialTimeout,
		OnReject:         func(error) { rejected.Inc() },
	}
}

// live handles one live message.
func (r *rankSub) live(ctx context.Context, seq uint64, payload []byte) error {
	rank := strconv.Itoa(r.rank)
	switch r.seq.observe(seq) {
	case actDuplicate:
		r.s.m.duplicates.WithLabelValues(rank).Inc()
		return nil
	case actRestart:
		r.s.m.restarts.WithLabelValues(rank).Inc()
		r.warn.Warn("kv event publisher restarted", "seq", seq)
		if err := r.state(ctx, UpdateRestart); err != nil {
			return err
		}
		r.seq.restart()
		if r.seq.observe(seq) == actApply {
			return r.apply(ctx, seq, payload, false)
		}
	case actApply:
		return r.apply(ctx, seq, payload, false)
	}
	// A gap: batches from want() up to seq-1 are missing.
	r.s.m.gaps.WithLabelValues(rank).Inc()
	if r.s.cfg.ReplayBasePort > 0 {
		recovered := false
		if r.probeRestart && r.seq.want() > 0 {
			// After a reconnect, first ask for the publisher's whole history:
			// if its ring still starts at 0, the rank is rebuilt exactly
			// whether or not the engine restarted meanwhile.
			err := r.replay(ctx, 0, seq, func() error {
				r.s.m.restarts.WithLabelValues(rank).Inc()
				if err := r.state(ctx, UpdateRestart); err != nil {
					return err
				}
				r.seq.restart()
				return nil
			})
			if ctx.Err() != nil {
				return ctx.Err()
			}
			recovered = err == nil
		}
		if !recovered {
			from := r.seq.want()
			if err := r.replay(ctx, from, seq, nil); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r.warn.Warn("kv event replay failed", "from", from, "err", err)
			}
		}
	}
	switch w := r.seq.want(); {
	case seq < w:
		r.s.m.duplicates.WithLabelValues(rank).Inc()
		return nil
	case seq > w:
		if err := r.giveUp(ctx, w, seq); err != nil {
			return err
		}
	}
	return r.apply(ctx, seq, payload, false)
}

// giveUp reports batches from..to-1 as lost for good.
func (r *rankSub) giveUp(ctx context.Context, from, to uint64) error {
	r.s.m.incomplete.WithLabelValues(strconv.Itoa(r.rank)).Inc()
	r.warn.Warn("kv events lost; rank incomplete", "from", from, "to", to)
	if err := r.state(ctx, UpdateIncomplete); err != nil {
		return err
	}
	if to > 0 {
		r.seq.done(to - 1)
	}
	return nil
}

// apply decodes and delivers the next batch. An undecodable payload is lost
// for good (a replay would return the same bytes).
func (r *rankSub) apply(ctx context.Context, seq uint64, payload []byte, replayed bool) error {
	b, err := r.s.decode(payload)
	if err != nil {
		r.s.m.decodeErrors.WithLabelValues(strconv.Itoa(r.rank)).Inc()
		r.warn.Warn("undecodable kv event batch", "seq", seq, "err", err)
		if err := r.state(ctx, UpdateIncomplete); err != nil {
			return err
		}
		r.seq.done(seq)
		return nil
	}
	b.Seq, b.Rank = seq, r.rank
	u := Update{Kind: UpdateBatch, Rank: r.rank, Batch: b, Replayed: replayed}
	select {
	case r.s.updates <- u:
	default:
		t := time.NewTimer(r.s.cfg.DeliverTimeout)
		defer t.Stop()
		select {
		case r.s.updates <- u:
		case <-t.C:
			// Dropped: not marked applied, so the next message shows a gap
			// and the replay recovers it.
			r.s.m.dropped.WithLabelValues(strconv.Itoa(r.rank)).Inc()
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.s.m.batches.WithLabelValues(strconv.Itoa(r.rank)).Inc()
	r.seq.done(seq)
	return nil
}

// state delivers a restart or incomplete update, waiting for room.
func (r *rankSub) state(ctx context.Context, k UpdateKind) error {
	select {
	case r.s.updates <- Update{Kind: k, Rank: r.rank}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
