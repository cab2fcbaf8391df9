package respcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Entry is one stored response.
type Entry struct {
	// Model and Scope are the request's canonical model and tenant (for
	// purges).
	Model, Scope string
	// Status is the HTTP status (always 200 today).
	Status int
	// ContentType is the response's Content-Type.
	ContentType string
	// Stream reports whether Body is a server-sent event stream.
	Stream bool
	// Body is the exact bytes the client first received.
	Body []byte
	// Created is when the response was stored.
	Created time.Time
}

// size is what the entry counts against the byte budget.
func (e *Entry) size() int64 {
	return int64(len(e.Body)+len(e.Model)+len(e.Scope)+len(e.ContentType)) + entryOverhead
}

// entryOverhead approximates an entry's fixed cost (struct, list element,
// map slot, key).
const entryOverhead = 160

// Record types: the first byte of every value the caches store.
const (
	recordEntry  byte = 1
	recordVector byte = 2
)

// recordVersion is the second byte of every record.
const recordVersion byte = 1

// maxDimensions bounds a vector's size on the wire and in config.
const maxDimensions = 1 << 16

// errShort is a record that ends early.
var errShort = errors.New("record too short")

// MarshalEntry encodes e: type byte, version byte, then status, flags,
// created (Unix ms) and length-prefixed model, scope, content type, body.
func MarshalEntry(e *Entry) []byte {
	b := make([]byte, 0, 32+len(e.Body)+len(e.Model)+len(e.Scope)+len(e.ContentType))
	b = append(b, recordEntry, recordVersion)
	b = binary.AppendUvarint(b, uint64(e.Status))
	var flags uint64
	if e.Stream {
		flags |= 1
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendVarint(b, e.Created.UnixMilli())
	for _, s := range [][]byte{[]byte(e.Model), []byte(e.Scope), []byte(e.ContentType), e.Body} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// reader decodes a record defensively: every length is checked against
// what is left.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errShort
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) header(typ byte) {
	if len(r.b) < 2 {
		r.err = errShort
		return
	}
	if r.b[0] != typ {
		r.err = fmt.Errorf("record type %d, want %d", r.b[0], typ)
		return
	}
	if r.b[1] != recordVersion {
		r.err = fmt.Errorf("record version %d, want %d", r.b[1], recordVersion)
		return
	}
	r.b = r.b[2:]
}

func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d bytes after the record", len(r.b))
	}
	return r.err
}

// UnmarshalEntry decodes a MarshalEntry record. The entry's Body aliases b.
func UnmarshalEntry(b []byte) (*Entry, error) {
	r := &reader{b: b}
	r.header(recordEntry)
	status := r.uvarint()
	flags := r.uvarint()
	created := r.varint()
	model, scope, ct, body := r.bytes(), r.bytes(), r.bytes(), r.bytes()
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("decode cache entry: %w", err)
	}
	if status < 100 || status > 599 {
		return nil, fmt.Errorf("decode cache entry: status %d", status)
	}
	return &Entry{Model: string(model), Scope: string(scope), Status: int(status), ContentType: string(ct),
		Stream: flags&1 != 0, Body: body, Created: time.UnixMilli(created)}, nil
}

// Vector is one question of the semantic cache: its unit-length embedding,
// its partition, and the exact-cache key of its stored answer.
type Vector struct {
	// ID identifies the vector: the answer's key.
	ID string
	// Partition is the Request.Partition it answers in.
	Partition string
	// Model and Scope are the request's (for purges).
	Model, Scope string
	// Expires is when the answer's TTL ends.
	Expires time.Time
	// V is the embedding, L2-normalized.
	V []float32
}

// MarshalVector encodes v: type byte, version byte, expires (Unix ms),
// length-prefixed id, partition, model, scope, then the dimension count and
// the components as little-endian float32.
func MarshalVector(v *Vector) []byte {
	b := make([]byte, 0, 64+len(v.ID)+len(v.Partition)+len(v.Model)+len(v.Scope)+4*len(v.V))
	b = append(b, recordVector, recordVersion)
	b = binary.AppendVarint(b, v.Expires.UnixMilli())
	for _, s := range []string{v.ID, v.Partition, v.Model, v.Scope} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(v.V)))
	for _, f := range v.V {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// UnmarshalVector decodes a MarshalVector record; it rejects a vector
// that is empty, too large or not finite.
func UnmarshalVector(b []byte) (*Vector, error) {
	r := &reader{b: b}
	r.header(recordVector)
	expires := r.varint()
	id, part, model, scope := r.bytes(), r.bytes(), r.bytes(), r.bytes()
	dims := r.uvarint()
	if r.err == nil && (dims == 0 || dims > maxDimensions || dims*4 != uint64(len(r.b))) {
		r.err = fmt.Errorf("%d dimensions in %d bytes", dims, len(r.b))
	}
	var v []float32
	if r.err == nil {
		v = make([]float32, dims)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(r.b[4*i:]))
			if f := float64(v[i]); math.IsNaN(f) || math.IsInf(f, 0) {
				r.err = fmt.Errorf("component %d is %v", i, f)
				break
			}
		}
		if r.err == nil {
			r.b = r.b[4*dims:]
		}
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("decode cache vector: %w", err)
	}
	return &Vector{ID: string(id), Partition: string(part), Model: string(model), Scope: string(scope),
		Expires: time.UnixMilli(expires), V: v}, nil
}
