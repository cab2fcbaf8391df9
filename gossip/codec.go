package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Message type bytes: the first byte of every user message a node sends.
const (
	msgAnnounce byte = 0x10
	msgSummary  byte = 0x11
	msgResync   byte = 0x12
	msgLeave    byte = 0x13
	// wireVersion is the second byte of every message.
	wireVersion byte = 1
	// maxNameLen bounds node names on the wire.
	maxNameLen = 128
)

// ErrMalformed is wrapped by every decoding error in this package.
var ErrMalformed = errors.New("malformed gossip message")

// Load is a replica's load as its sidecar reports it.
type Load struct {
	// Running and Waiting are the engine's running and queued requests.
	Running uint32 `json:"running"`
	Waiting uint32 `json:"waiting"`
	// InFlight is the requests the sidecar is proxying right now.
	InFlight uint32 `json:"in_flight"`
	// KVCacheUsage is the engine's KV cache usage in [0,1].
	KVCacheUsage float32 `json:"kv_cache_usage"`
	// WaitingPrefillTokens is the uncached prompt tokens of the requests
	// waiting for their first token: the prefill work queued or running on
	// the engine (the sidecar counts each prompt past the prefix its block
	// set holds at arrival).
	WaitingPrefillTokens uint64 `json:"waiting_prefill_tokens"`
	// Pending is the requests the sidecar is proxying whose prefill is not
	// over (no first token yet): WaitingPrefillTokens is their work. An
	// engine that reports more waiting requests than this serves traffic
	// that bypasses the sidecar.
	Pending uint32 `json:"pending"`
	// Origins breaks InFlight, Pending and WaitingPrefillTokens down by the
	// balancer that sent the requests (at most MaxOrigins, the largest
	// first), so that a balancer can add the other balancers' share to its
	// own exact counts without counting its own twice.
	Origins []OriginLoad `json:"origins,omitempty"`
}

// MaxOrigins bounds Load.Origins on the wire.
const MaxOrigins = 8

// OriginLoad is one balancer's share of a replica's load.
type OriginLoad struct {
	// Origin names the balancer (its gossip node name).
	Origin string `json:"origin"`
	// InFlight, Pending and PrefillTokens are as in Load, for this origin.
	InFlight      uint32 `json:"in_flight"`
	Pending       uint32 `json:"pending"`
	PrefillTokens uint64 `json:"prefill_tokens"`
}

// Origin returns the share of the balancer named origin (zero when absent).
func (l *Load) Origin(origin string) OriginLoad {
	for _, o := range l.Origins {
		if o.Origin == origin {
			return o
		}
	}
	return OriginLoad{Origin: origin}
}

// announce is a sidecar's periodic report to balancers and observers.
type announce struct {
	From       string
	SentAt     int64 // Unix nanoseconds
	Load       Load
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
	b = binary.AppendUvarint(b, uint64(a.Load.Running))
	b = binary.AppendUvarint(b, uint64(a.Load.Waiting))
	b = binary.AppendUvarint(b, uint64(a.Load.InFlight))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(a.Load.KVCacheUsage))
	b = binary.AppendUvarint(b, a.Load.WaitingPrefillTokens)
	b = binary.AppendUvarint(b, a.Epoch)
	b = binary.AppendUvarint(b, a.Seq)
	// Added after the first release: decoders accept messages that end here.
	b = binary.AppendUvarint(b, uint64(a.Load.Pending))
	origins := a.Load.Origins[:min(len(a.Load.Origins), MaxOrigins)]
	b = binary.AppendUvarint(b, uint64(len(origins)))
	for _, o := range origins {
		b = appendString(b, o.Origin[:min(len(o.Origin), maxNameLen)])
		b = binary.AppendUvarint(b, uint64(o.InFlight))
		b = binary.AppendUvarint(b, uint64(o.Pending))
		b = binary.AppendUvarint(b, o.PrefillTokens)
	}
	return b
}

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
	case msgAnnounce, msgSummary, msgResync, msgLeave:
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
	a.Load.Running = d.uint32()
	a.Load.Waiting = d.uint32()
	a.Load.InFlight = d.uint32()
	if d.err == nil {
		if len(d.b) < 4 {
			d.fail("truncated kv usage")
		} else {
			a.Load.KVCacheUsage = math.Float32frombits(binary.LittleEndian.Uint32(d.b))
			d.b = d.b[4:]
		}
	}
	a.Load.WaitingPrefillTokens = d.uvarint()
	a.Epoch = d.uvarint()
	a.Seq = d.uvarint()
	if d.err == nil && len(d.b) > 0 { // a sender that reports pending and origins
		a.Load.Pending = d.uint32()
		n := d.uvarint()
		if n > MaxOrigins {
			d.fail("%d origins", n)
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			o := OriginLoad{Origin: d.string()}
			if d.err == nil && (o.Origin == "" || len(o.Origin) > maxNameLen) {
				d.fail("origin name of %d bytes", len(o.Origin))
			}
			o.InFlight = d.uint32()
			o.Pending = d.uint32()
			o.PrefillTokens = d.uvarint()
			a.Load.Origins = append(a.Load.Origins, o)
		}
	}
	d.end()
	return a, d.err
}

// sentTime converts Unix nanoseconds to a time.
func sentTime(ns int64) time.Time { return time.Unix(0, ns) }
