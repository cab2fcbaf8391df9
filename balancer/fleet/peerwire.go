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
	// peerRecordMax is the most bytes one record takes.
	peerRecordMax = 8 + 6*binary.MaxVarintLen64
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
	if flags&^peerFlagReset != 0 {
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
		f(r)
	}
	if len(body) > 0 {
		return flags, seq, fail("%d bytes after the records", len(body))
	}
	return flags, seq, nil
}
