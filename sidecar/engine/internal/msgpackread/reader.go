package msgpackread

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Type is the kind of the next msgpack value.
type Type uint8

// Value types.
const (
	Invalid Type = iota
	Nil
	Bool
	Int // a signed encoding (negative fixint or int8…int64)
	Uint
	Float
	Str
	Bin
	Array
	Map
	Ext
)

// ErrTruncated is returned when a header claims more than the payload holds.
var ErrTruncated = errors.New("msgpack value longer than the payload")

// Reader reads msgpack values from one payload.
type Reader struct {
	buf []byte
	br  bytes.Reader
	dec *msgpack.Decoder
}

// NewReader returns a Reader over payload (not copied; keep it unchanged while
// reading).
func NewReader(payload []byte) *Reader {
	r := &Reader{}
	r.Reset(payload)
	return r
}

// Reset points the reader at a new payload.
func (r *Reader) Reset(payload []byte) {
	r.buf = payload
	r.br.Reset(payload)
	if r.dec == nil {
		r.dec = msgpack.NewDecoder(&r.br)
	} else {
		r.dec.Reset(&r.br)
	}
}

// Remaining is the number of unread bytes.
func (r *Reader) Remaining() int { return r.br.Len() }

func (r *Reader) pos() int { return len(r.buf) - r.br.Len() }

// Peek returns the type of the next value without consuming it.
func (r *Reader) Peek() (Type, error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return Invalid, fmt.Errorf("peek: %w", err)
	}
	return typeOf(c), nil
}

func typeOf(c byte) Type {
	switch {
	case msgpcode.IsFixedNum(c):
		if int8(c) < 0 {
			return Int
		}
		return Uint
	case msgpcode.IsFixedMap(c):
		return Map
	case msgpcode.IsFixedArray(c):
		return Array
	case msgpcode.IsFixedString(c):
		return Str
	}
	switch c {
	case msgpcode.Nil:
		return Nil
	case msgpcode.False, msgpcode.True:
		return Bool
	case msgpcode.Int8, msgpcode.Int16, msgpcode.Int32, msgpcode.Int64:
		return Int
	case msgpcode.Uint8, msgpcode.Uint16, msgpcode.Uint32, msgpcode.Uint64:
		return Uint
	case msgpcode.Float, msgpcode.Double:
		return Float
	case msgpcode.Str8, msgpcode.Str16, msgpcode.Str32:
		return Str
	case msgpcode.Bin8, msgpcode.Bin16, msgpcode.Bin32:
		return Bin
	case msgpcode.Array16, msgpcode.Array32:
		return Array
	case msgpcode.Map16, msgpcode.Map32:
		return Map
	case msgpcode.FixExt1, msgpcode.FixExt2, msgpcode.FixExt4, msgpcode.FixExt8, msgpcode.FixExt16,
		msgpcode.Ext8, msgpcode.Ext16, msgpcode.Ext32:
		return Ext
	}
	return Invalid
}

// ArrayLen reads an array header; nil gives -1. Each element takes at least
// one byte, so a length beyond the bytes left is rejected.
func (r *Reader) ArrayLen() (int, error) {
	n, err := r.dec.DecodeArrayLen()
	if err != nil {
		return 0, fmt.Errorf("array header: %w", err)
	}
	if n > r.Remaining() {
		return 0, fmt.Errorf("array of %d: %w", n, ErrTruncated)
	}
	return n, nil
}

// MapLen reads a map header; nil gives -1. Each pair takes at least two
// bytes.
func (r *Reader) MapLen() (int, error) {
	n, err := r.dec.DecodeMapLen()
	if err != nil {
		return 0, fmt.Errorf("map header: %w", err)
	}
	if n > r.Remaining()/2 {
		return 0, fmt.Errorf("map of %d: %w", n, ErrTruncated)
	}
	return n, nil
}

// checkBytes verifies that a str/bin at the current position fits.
func (r *Reader) checkBytes() error {
	p := r.pos()
	if p >= len(r.buf) {
		return io.ErrUnexpectedEOF
	}
	n, hdr, ok := bytesHeader(r.buf[p:])
	if !ok {
		return nil // not a str/bin: the decoder reports the type error
	}
	if hdr+n > len(r.buf)-p {
		return fmt.Errorf("string of %d: %w", n, ErrTruncated)
	}
	return nil
}

// bytesHeader returns the length and header size of a str/bin at b[0].
func bytesHeader(b []byte) (n, hdr int, ok bool) {
	c := b[0]
	if msgpcode.IsFixedString(c) {
		return int(c & msgpcode.FixedStrMask), 1, true
	}
	var size int
	switch c {
	case msgpcode.Str8, msgpcode.Bin8:
		size = 1
	case msgpcode.Str16, msgpcode.Bin16:
		size = 2
	case msgpcode.Str32, msgpcode.Bin32:
		size = 4
	default:
		return 0, 0, false
	}
	if len(b) < 1+size {
		return 1 << 40, 1, true // forces the truncation error
	}
	switch size {
	case 1:
		n = int(b[1])
	case 2:
		n = int(binary.BigEndian.Uint16(b[1:]))
	default:
		n = int(binary.BigEndian.Uint32(b[1:]))
	}
	return n, 1 + size, true
}

// String reads a str (or bin) value; nil gives "".
func (r *Reader) String() (string, error) {
	if err := r.checkBytes(); err != nil {
		return "", err
	}
	s, err := r.dec.DecodeString()
	if err != nil {
		return "", fmt.Errorf("string: %w", err)
	}
	return s, nil
}

// Bytes reads a bin (or str) value; nil gives nil.
func (r *Reader) Bytes() ([]byte, error) {
	if err := r.checkBytes(); err != nil {
		return nil, err
	}
	b, err := r.dec.DecodeBytes()
	if err != nil {
		return nil, fmt.Errorf("bytes: %w", err)
	}
	return b, nil
}

// Float reads a float or integer as float64.
func (r *Reader) Float() (float64, error) {
	f, err := r.dec.DecodeFloat64()
	if err != nil {
		return 0, fmt.Errorf("float: %w", err)
	}
	return f, nil
}

// Int reads an integer of any width and sign; nil gives 0. A uint64 above
// MaxInt64 wraps, like a two's-complement reinterpretation.
func (r *Reader) Int() (int64, error) {
	if v, ok := r.rawInt(true); ok {
		return int64(v), nil
	}
	t, err := r.Peek()
	if err != nil {
		return 0, err
	}
	if t != Int && t != Uint && t != Nil {
		return 0, fmt.Errorf("int: unexpected %v", t)
	}
	v, err := r.dec.DecodeUint64()
	if err != nil {
		return 0, fmt.Errorf("int: %w", err)
	}
	return int64(v), nil
}

// rawInt is the fast path of Int and Hash: it decodes a complete integer
// (or nil, when allowNil) at the current position straight from the payload
// and skips it; ok is false for anything else, which is left unread.
func (r *Reader) rawInt(allowNil bool) (v uint64, ok bool) {
	p := r.pos()
	b := r.buf
	if p >= len(b) {
		return 0, false
	}
	c := b[p]
	var n int
	switch {
	case c <= 0x7f || c >= 0xe0: // positive / negative fixint
		v, n = uint64(int64(int8(c))), 1
	case c == msgpcode.Nil && allowNil:
		v, n = 0, 1
	case c == msgpcode.Uint8 && p+2 <= len(b):
		v, n = uint64(b[p+1]), 2
	case c == msgpcode.Uint16 && p+3 <= len(b):
		v, n = uint64(binary.BigEndian.Uint16(b[p+1:])), 3
	case c == msgpcode.Uint32 && p+5 <= len(b):
		v, n = uint64(binary.BigEndian.Uint32(b[p+1:])), 5
	case (c == msgpcode.Uint64 || c == msgpcode.Int64) && p+9 <= len(b):
		v, n = binary.BigEndian.Uint64(b[p+1:]), 9
	case c == msgpcode.Int8 && p+2 <= len(b):
		v, n = uint64(int64(int8(b[p+1]))), 2
	case c == msgpcode.Int16 && p+3 <= len(b):
		v, n = uint64(int64(int16(binary.BigEndian.Uint16(b[p+1:])))), 3
	case c == msgpcode.Int32 && p+5 <= len(b):
		v, n = uint64(int64(int32(binary.BigEndian.Uint32(b[p+1:])))), 5
	default:
		return 0, false
	}
	if _, err := r.br.Seek(int64(p+n), io.SeekStart); err != nil {
		return 0, false
	}
	return v, true
}

// rawStr returns the bytes of a str (or bin) at the current position without
// copying and skips it; ok is false for anything else, which is left unread.
func (r *Reader) rawStr() (s []byte, ok bool) {
	p := r.pos()
	if p >= len(r.buf) {
		return nil, false
	}
	n, hdr, isBytes := bytesHeader(r.buf[p:])
	if !isBytes || hdr+n > len(r.buf)-p {
		return nil, false
	}
	if _, err := r.br.Seek(int64(p+hdr+n), io.SeekStart); err != nil {
		return nil, false
	}
	return r.buf[p+hdr : p+hdr+n], true
}

// Hash reads a block hash and normalises it to uint64: an unsigned integer of
// any width as is, a negative integer as its two's complement, bytes as their
// last 8 bytes big-endian (left-padded with zeros when shorter).
func (r *Reader) Hash() (uint64, error) {
	if v, ok := r.rawInt(false); ok {
		return v, nil
	}
	t, err := r.Peek()
	if err != nil {
		return 0, err
	}
	switch t {
	case Int, Uint:
		v, err := r.dec.DecodeUint64()
		if err != nil {
			return 0, fmt.Errorf("hash: %w", err)
		}
		return v, nil
	case Bin, Str:
		b, err := r.Bytes()
		if err != nil {
			return 0, fmt.Errorf("hash: %w", err)
		}
		return HashFromBytes(b), nil
	}
	return 0, fmt.Errorf("hash: unexpected %v", t)
}

// HashFromBytes returns the last 8 bytes of b as a big-endian uint64,
// left-padded with zeros when b is shorter (vLLM's own int conversion).
func HashFromBytes(b []byte) uint64 {
	if len(b) > 8 {
		b = b[len(b)-8:]
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// IsNil consumes a nil and reports true, or leaves a non-nil value unread.
func (r *Reader) IsNil() (bool, error) {
	t, err := r.Peek()
	if err != nil {
		return false, err
	}
	if t != Nil {
		return false, nil
	}
	return true, r.dec.DecodeNil()
}
