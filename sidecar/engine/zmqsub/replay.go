package zmqsub

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"strconv"

	"github.com/go-zeromq/zmq4"

	"github.com/inferrail/inferrail/internal/zmtpguard"
)

// errReplayShort is returned when the replay ring no longer reaches back to
// the wanted sequence number.
var errReplayShort = errors.New("replay does not reach back far enough")

// replay asks the rank's replay socket for every batch from seq from on and
// applies those that follow the last applied one, in order, up to but not
// including head, the live message that revealed the gap: batches from head
// on arrive on the live stream, and a replayed one would make them look like
// duplicates. It stops at the end marker, at head, at the first hole, or
// after ReplayTimeout. When the first
// replayed batch is exactly from, onFirst (if not nil) runs before it is
// applied; when it is later, nothing is applied.
func (r *rankSub) replay(ctx context.Context, from, head uint64, onFirst func() error) error {
	cfg := r.s.cfg
	rank := strconv.Itoa(r.rank)
	ctx, cancel := context.WithTimeout(ctx, cfg.ReplayTimeout)
	defer cancel()
	ep := cfg.endpoint(cfg.ReplayBasePort, r.rank)
	d := zmq4.NewDealer(zmtpguard.WithLimits(ctx, r.limits()), zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(cfg.DialTimeout),
		zmq4.WithAutomaticReconnect(false), zmq4.WithLogger(discardLogger()))
	defer d.Close()
	result := "error"
	defer func() { r.s.m.replays.WithLabelValues(rank, result).Inc() }()
	if err := d.Dial(zmtpguard.Endpoint(ep)); err != nil {
		return fmt.Errorf("dial replay %s: %w", ep, err)
	}
	var start [8]byte
	binary.BigEndian.PutUint64(start[:], from)
	if err := d.SendMulti(zmq4.NewMsgFrom([]byte{}, start[:])); err != nil {
		return fmt.Errorf("send replay request: %w", err)
	}
	first := true
	for {
		msg, err := d.Recv()
		if err != nil {
			if ctx.Err() != nil {
				result = "timeout"
			}
			return fmt.Errorf("receive replay: %w", err)
		}
		seq, payload, ok := replayFrames(msg.Frames)
		if !ok {
			r.s.m.malformed.WithLabelValues(rank).Inc()
			continue
		}
		if len(payload) == 0 {
			if first {
				result = "empty"
				return errReplayShort
			}
			result = "ok"
			return nil
		}
		if seq >= head {
			// The live stream carries the rest. An engine that published
			// while it replayed sends these honestly; past the head nothing
			// is taken from the replay, however much it sends.
			if first {
				result = "empty"
				return errReplayShort
			}
			result = "ok"
			return nil
		}
		if first && seq > from {
			result = "short"
			return fmt.Errorf("%w: first replayed seq %d, wanted %d", errReplayShort, seq, from)
		}
		if first && onFirst != nil {
			if err := onFirst(); err != nil {
				return err
			}
		}
		first = false
		switch w := r.seq.want(); {
		case seq < w:
			continue // already applied
		case seq > w:
			result = "hole"
			return fmt.Errorf("replay skipped from %d to %d", w, seq)
		}
		if err := r.apply(ctx, seq, payload, true); err != nil {
			return err
		}
		if r.seq.want() != seq+1 {
			result = "dropped"
			return errors.New("replayed batch not delivered")
		}
	}
}

// replayFrames reads a replay message in either framing (docs/engines.md#vllm-replay):
// [topic, seq, payload] (vLLM v0.25+) or [seq, payload] (before, and SGLang),
// each possibly led by the DEALER's empty delimiter frame. The last two frames
// are always seq and payload; the end marker has an empty payload.
func replayFrames(frames [][]byte) (seq uint64, payload []byte, ok bool) {
	n := len(frames)
	if n < 2 || n > 4 || len(frames[n-2]) != 8 {
		return 0, nil, false
	}
	return binary.BigEndian.Uint64(frames[n-2]), frames[n-1], true
}

func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
