package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/inferrail/inferrail/internal/load"
)

// Message type bytes: the first byte of every user message a node sends.
const (
	msgAnnounce byte = 0x10
	msgSummary  byte = 0x11
	msgResync   byte = 0x12
	msgLeave    byte = 0x13
	// msgPlacements carries a balancer's recent placements to the other
	// balancers; its body is the balancer's (see Node.SendPlacements).
	msgPlacements byte = 0x14
	// msgLoad carries a balancer's own load on the replicas to the other
	// balancers; its body is the balancer's (see Node.SendLoad).
	msgLoad byte = 0x15
	// wireVersion is the second byte of every message.
	wireVersion byte = 1
	// maxNameLen bounds node names on the wire.
	maxNameLen = 128
)

// ErrMalformed is wrapped by every decoding error in this package.
var ErrMalformed = errors.New("malformed gossip message")

// MaxOrigins bounds load.Report.Origins on the wire.
const MaxOrigins = 8

// announce is a sidecar's periodic report to balancers and observers.
type announce struct {
	From       string
	SentAt     int64 // Unix nanoseconds
	Load       load.Report
	Epoch, Seq uint64 // summary version; Epoch 0: no summary
}

func appendHeader(b []byte, typ byte, from string) []byte {
	b = append(b, typ, wireVersion)
	return appendString(b, from)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func (a *announce) marshal() []byte {
	b := appendHeader(make([]byte, 0, 64+len(a.From)), msgAnnounce, a.From)
	b = binary.AppendUvarint(b, uint64(a.SentAt))
	b = binary.AppendUvarint(b, uint64(clampU32(a.Load.Running)))
	b = binary.AppendUvarint(b, uint64(clampU32(a.Load.Waiting)))
	b = binary.AppendUvarint(b, uint64(clampU32(a.Load.InFlight)))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(a.Load.KVUsage)))
	b = binary.AppendUvarint(b, uint64(max(a.Load.PrefillTokens, 0)))
	b = binary.AppendUvarint(b, a.Epoch)
	b = binary.AppendUvarint(b, a.Seq)
	// Added after the first release: decoders accept messages that end here.
	b = binary.AppendUvarint(b, uint64(clampU32(a.Load.Pending)))
	origins := a.Load.Origins[:min(len(a.Load.Origins), MaxOrigins)]
	b = binary.AppendUvarint(b, uint64(len(origins)))
	for _, o := range origins {
		b = appendString(b, o.Origin[:min(len(o.Origin), maxNameLen)])
		b = binary.AppendUvarint(b, uint64(clampU32(o.InFlight)))
		b = binary.AppendUvarint(b, uint64(clampU32(o.Pending)))
		b = binary.AppendUvarint(b, uint64(max(o.PrefillTokens, 0)))
	}
	// Added later still: 0 unknown, else the blocks held plus one.
	b = binary.AppendUvarint(b, uint64(max(a.Load.HeldBlocks, -1)+1))
	return b
}

// clampU32 bounds a count to the wire's uint32 (negative: 0).
func clampU32(v int64) uint32 { return uint32(min(max(v, 0), math.MaxUint32)) }

// marshalSummary wraps an encoded summary message (gossip/summary) for the wire.
func marshalSummary(from string, body []byte) []byte {
	b := appendHeader(make([]byte, 0, 8+len(from)+len(body)), msgSummary, from)
	return append(b, body...)
}

// marshalResync asks a sidecar for a snapshot.
func marshalResync(from string) []byte {
	return appendHeader(nil, msgResync, from)
}

// marshalLeave tells members the sender is leaving on purpose (memberlist's
// leave callback does not say whether a node left or failed).
func marshalLeave(from string) []byte {
	return appendHeader(nil, msgLeave, from)
}

// decoder reads varints and strings, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint32() uint32 {
	v := d.uvarint()
	if v > math.MaxUint32 {
		d.fail("%d overflows uint32", v)
	}
	return uint32(v)
}

// int63 reads a uvarint count into an int64, saturating at math.MaxInt64
// (the wire field is a uint64; load.Report counts are int64).
func (d *decoder) int63() int64 {
	return int64(min(d.uvarint(), math.MaxInt64))
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) || n > MaxMetaSize {
		d.fail("string of %d bytes in %d", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) end() {
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
}

// header is the common start of a user message.
type header struct {
	typ  byte
	from string
}

// decodeHeader reads the type, version and sender; body is what follows.
func decodeHeader(b []byte) (h header, body []byte, err error) {
	if len(b) < 3 {
		return h, nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	h.typ = b[0]
	switch h.typ {
	case msgAnnounce, msgSummary, msgResync, msgLeave, msgPlacements, msgLoad:
	default:
		return h, nil, fmt.Errorf("%w: unknown type 0x%02x", ErrMalformed, h.typ)
	}
	if b[1] != wireVersion {
		return h, nil, fmt.Errorf("%w: version %d", ErrMalformed, b[1])
	}
	d := decoder{b: b[2:]}
	h.from = d.string()
	if d.err == nil && (h.from == "" || len(h.from) > maxNameLen) {
		d.fail("sender name of %d bytes", len(h.from))
	}
	if d.err != nil {
		return h, nil, d.err
	}
	return h, d.b, nil
}

// decodeAnnounce decodes the body of an announcement.
func decodeAnnounce(from string, body []byte) (announce, error) {
	d := decoder{b: body}
	a := announce{From: from}
	sent := d.uvarint()
	if sent > math.MaxInt64 {
		d.fail("send time %d", sent)
	}
	a.SentAt = int64(sent)
	a.Load.Running = int64(d.uint32())
	a.Load.Waiting = int64(d.uint32())
	a.Load.InFlight = int64(d.uint32())
	if d.err == nil {
		if len(d.b) < 4 {
			d.fail("truncated kv usage")
		} else {
			a.Load.KVUsage = widen(math.Float32frombits(binary.LittleEndian.Uint32(d.b)))
			d.b = d.b[4:]
		}
	}
	a.Load.PrefillTokens = d.int63()
	a.Epoch = d.uvarint()
	a.Seq = d.uvarint()
	if d.err == nil && len(d.b) > 0 { // a sender that reports pending and origins
		a.Load.Pending = int64(d.uint32())
		n := d.uvarint()
		if n > MaxOrigins {
			d.fail("%d origins", n)
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			o := load.Share{Origin: d.string()}
			if d.err == nil && (o.Origin == "" || len(o.Origin) > maxNameLen) {
				d.fail("origin name of %d bytes", len(o.Origin))
			}
			o.InFlight = int64(d.uint32())
			o.Pending = int64(d.uint32())
			o.PrefillTokens = d.int63()
			a.Load.Origins = append(a.Load.Origins, o)
		}
	}
	a.Load.HeldBlocks = -1
	if d.err == nil && len(d.b) > 0 { // a sender that reports the blocks it holds
		a.Load.HeldBlocks = d.int63() - 1
	}
	d.end()
	return a, d.err
}

// sentTime converts Unix nanoseconds to a time.
func sentTime(ns int64) time.Time { return time.Unix(0, ns) }

// widen returns the float64 whose shortest decimal is f's: the usage goes
// over the wire as a float32, and float64(f) would show 0.3 as
// 0.30000001192092896 in /v1/gossip/state.
func widen(f float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	if err != nil { // NaN and infinities format as themselves and parse back
		return float64(f)
	}
	return v
}
