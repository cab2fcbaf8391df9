package fleet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/inferrail/inferrail/balancer/route"
)

// The wire form of a balancer's own load, as it sends it to the other
// balancers (Fleet.ShareLoad, gossip.Node.SendLoad;
// docs/routing.md#the-load-model). One message is
//
//	flags     byte (bit 0, reset: the sender has no work on any replica
//	          this message and the following ones of its round do not name)
//	seq       uvarint (the sender's message number: increasing, and a
//	          restarted sender starts above its last)
//	count     uvarint
//	count records:
//	  replica     8 bytes, little endian (xxh3 of the replica's ID)
//	  in_flight   uvarint (<= maxPeerCount)
//	  pending     uvarint (<= in_flight)
//	  prefill     uvarint (the pending requests' uncached prompt tokens,
//	              <= maxPeerTokens)
//	  step        uvarint (the part of prefill sent before the last engine
//	              step end the sender saw there, <= prefill)
//	  step_age    uvarint (1 + microseconds from that step end to the
//	              sending, <= maxStepAge; 0: none seen)
//	  output      uvarint (the output reserve in tokens, <= maxPeerTokens)
//	  with flag bit 1 (peerFlagAnswers), the sender's followed answers there
//	  (route.PeerAnswer), those ending soonest first:
//	  answers     uvarint (<= in_flight, <= maxPeerAnswers)
//	  answers records:
//	    left      uvarint (what max_tokens leaves, shifted left by one; the
//	              low bit set once the first token was seen; <= maxPeerLeft)
//	    reserve   uvarint (the output reserve its lease counted, tokens,
//	              1..maxPeerTokens)
//
// A record's answers take at most peerAnswersBytes: a sender with more
// leaves out those ending last, which free memory the latest.
//
// Every count is the sender's absolute count on the replica when it wrote
// the message, so a lost message is mended by the next one, and an older one
// arriving late is dropped by its seq. Ages are relative, so the balancers'
// clocks need not agree.

// Bounds a receiver enforces.
const (
	maxPeerCount  = 1 << 31
	maxPeerTokens = 1 << 48
	maxStepAge    = uint64(time.Hour / time.Microsecond)
	peerFlagReset = 1
	// peerFlagAnswers: the records carry the sender's followed answers.
	peerFlagAnswers = 2
	// maxPeerAnswers bounds the answers of one record, maxPeerLeft an
	// answer's left field, and peerAnswersBytes the bytes they take.
	maxPeerAnswers   = 256
	maxPeerLeft      = 1<<32 - 1
	peerAnswersBytes = 800
	// peerRecordMax is the most bytes one record takes, its answers
	// included.
	peerRecordMax = 8 + 7*binary.MaxVarintLen64 + peerAnswersBytes
	// peerHeaderMax is the most bytes a message's flags, seq and count take.
	peerHeaderMax = 1 + 2*binary.MaxVarintLen64
)

// errPeerLoad is wrapped by every decoding error of a load message.
var errPeerLoad = errors.New("malformed balancer load")

// replicaKey is the key a replica goes by on the wire.
func replicaKey(id string) uint64 { return xxh3.HashString(id) }

// peerRecord is one replica's load in a message.
type peerRecord struct {
	replica uint64
	w       route.Work
	// answers are the sender's followed answers there (At unset), with
	// flag peerFlagAnswers only.
	answers []route.PeerAnswer
}

// appendPeerRecord appends w's record for the replica keyed key, with its
// step end aged from now.
func appendPeerRecord(b []byte, key uint64, w route.Work, now time.Time) []byte {
	b = binary.LittleEndian.AppendUint64(b, key)
	b = binary.AppendUvarint(b, uint64(max(w.InFlight, 0)))
	b = binary.AppendUvarint(b, uint64(min(max(w.Pending, 0), max(w.InFlight, 0))))
	b = binary.AppendUvarint(b, uint64(max(w.PrefillTokens, 0)))
	b = binary.AppendUvarint(b, uint64(min(max(w.StepTokens, 0), max(w.PrefillTokens, 0))))
	var age uint64
	if !w.StepStart.IsZero() {
		age = 1 + min(uint64(max(now.Sub(w.StepStart), 0)/time.Microsecond), maxStepAge-1)
	}
	b = binary.AppendUvarint(b, age)
	return binary.AppendUvarint(b, uint64(max(w.OutputReserve, 0)))
}

// appendPeerAnswers appends a record's answers, for a message with flag
// peerFlagAnswers: those of as that fit peerAnswersBytes, at most inFlight
// and maxPeerAnswers, in order (the sender sorts them soonest first), and
// none without a reserve.
func appendPeerAnswers(b []byte, as []route.PeerAnswer, inFlight int) []byte {
	var enc [peerAnswersBytes]byte
	e, n := enc[:0], 0
	for _, a := range as {
		if n >= min(max(inFlight, 0), maxPeerAnswers) {
			break
		}
		if a.Reserve <= 0 {
			continue
		}
		left := min(uint64(max(a.Left, 0)), maxPeerLeft>>1) << 1
		if a.Started {
			left |= 1
		}
		var one [2 * binary.MaxVarintLen64]byte
		o := binary.AppendUvarint(one[:0], left)
		o = binary.AppendUvarint(o, min(uint64(a.Reserve), maxPeerTokens))
		if len(e)+len(o) > peerAnswersBytes {
			break
		}
		e, n = append(e, o...), n+1
	}
	b = binary.AppendUvarint(b, uint64(n))
	return append(b, e...)
}

// decodePeerLoad decodes a message received at now, calling f for each
// record in order (StepStart set from its age against now). It returns the
// flags and seq; on a malformed body it returns an error wrapping
// errPeerLoad, and the records before the error were passed.
func decodePeerLoad(body []byte, now time.Time, f func(peerRecord)) (flags byte, seq uint64, err error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errPeerLoad}, args...)...)
	}
	uvarint := func(name string, limit uint64) (uint64, error) {
		v, n := binary.Uvarint(body)
		if n <= 0 {
			return 0, fail("truncated %s", name)
		}
		if v > limit {
			return 0, fail("%s %d over %d", name, v, limit)
		}
		body = body[n:]
		return v, nil
	}
	if len(body) == 0 {
		return 0, 0, fail("empty")
	}
	flags, body = body[0], body[1:]
	if flags&^(peerFlagReset|peerFlagAnswers) != 0 {
		return flags, 0, fail("flags 0x%02x", flags)
	}
	if seq, err = uvarint("seq", math.MaxUint64); err != nil {
		return flags, seq, err
	}
	count, err := uvarint("count", uint64(len(body))/9)
	if err != nil {
		return flags, seq, err
	}
	for range count {
		if len(body) < 8 {
			return flags, seq, fail("truncated record")
		}
		r := peerRecord{replica: binary.LittleEndian.Uint64(body)}
		body = body[8:]
		var v [6]uint64
		limits := [6]uint64{maxPeerCount, maxPeerCount, maxPeerTokens, maxPeerTokens, maxStepAge, maxPeerTokens}
		names := [6]string{"in_flight", "pending", "prefill", "step", "step_age", "output"}
		for i := range v {
			if v[i], err = uvarint(names[i], limits[i]); err != nil {
				return flags, seq, err
			}
		}
		if v[1] > v[0] {
			return flags, seq, fail("pending %d over in_flight %d", v[1], v[0])
		}
		if v[3] > v[2] {
			return flags, seq, fail("step %d over prefill %d", v[3], v[2])
		}
		r.w = route.Work{InFlight: int(v[0]), Pending: int(v[1]), PrefillTokens: int64(v[2]),
			StepTokens: int64(v[3]), OutputReserve: int64(v[5])}
		if v[4] > 0 {
			r.w.StepStart = now.Add(-time.Duration(v[4]-1) * time.Microsecond)
		}
		if flags&peerFlagAnswers != 0 {
			n, err := uvarint("answers", min(v[0], maxPeerAnswers))
			if err != nil {
				return flags, seq, err
			}
			start := len(body)
			for range n {
				left, err := uvarint("answer left", maxPeerLeft)
				if err != nil {
					return flags, seq, err
				}
				res, err := uvarint("answer reserve", maxPeerTokens)
				if err != nil {
					return flags, seq, err
				}
				if res == 0 {
					return flags, seq, fail("answer without a reserve")
				}
				r.answers = append(r.answers, route.PeerAnswer{Left: int(left >> 1), Started: left&1 != 0, Reserve: int(res)})
			}
			if used := start - len(body); used > peerAnswersBytes {
				return flags, seq, fail("answers of %d bytes", used)
			}
		}
		f(r)
	}
	if len(body) > 0 {
		return flags, seq, fail("%d bytes after the records", len(body))
	}
	return flags, seq, nil
}
