package summary

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Medium names where a replica holds a block: GPU memory, or an offload tier.
type Medium uint8

// Media a summary can describe. MaxMedia bounds the number of filters.
const (
	MediumGPU Medium = 0
	MediumCPU Medium = 1
	MaxMedia         = 4
)

// String returns the medium's name as used in logs and JSON.
func (m Medium) String() string {
	switch m {
	case MediumGPU:
		return "gpu"
	case MediumCPU:
		return "cpu"
	default:
		return fmt.Sprintf("medium%d", uint8(m))
	}
}

// Message type bytes. Every summary message starts with one of them, followed
// by the wire version.
const (
	TypeSnapshot byte = 0x01
	TypeDelta    byte = 0x02
	// WireVersion is the version byte written after the type byte. Version 2
	// added removals to deltas and the removed keys to snapshots.
	WireVersion byte = 2
)

// Decoding limits: a filter never has more than MaxFilterBits bits or more
// than MaxHashFuncs hash functions.
const (
	MaxFilterBits = 1 << 30
	MaxHashFuncs  = 32
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed summary message")

// Filter is one medium's bloom filter as carried in a snapshot.
type Filter struct {
	Medium Medium
	// Count is the number of blocks added to the filter (approximate on the
	// receiving side when deltas repeat a block).
	Count uint64
	// M is the filter's size in bits, K its number of hash functions.
	M     uint64
	K     uint8
	Words []uint64
	// Gone lists keys whose bits the filter still has but whose blocks the
	// replica dropped since the filter was built: receivers answer "not
	// held" for them until the next epoch rebuilds the filter.
	Gone []Key
}

// Snapshot is a whole summary at (Epoch, Seq): it includes every delta up to
// and including Seq.
type Snapshot struct {
	Epoch, Seq uint64
	Filters    []Filter
}

// Change is one block added to, or removed from, one medium, by its filter
// key.
type Change struct {
	Medium Medium
	Key    Key
	// Removed reports a removal: no block the replica holds on Medium has
	// this key any more.
	Removed bool
}

// Delta carries the changes since sequence Seq-1 of the same epoch, in the
// order they happened.
type Delta struct {
	Epoch, Seq uint64
	// Oldest is the time (Unix nanoseconds) the oldest change in the delta
	// was recorded by the builder; receivers use it to measure freshness.
	Oldest  int64
	Changes []Change
}

// removedRun marks a delta run of removals in its medium byte.
const removedRun byte = 0x80

// Type reports the type byte of an encoded message, checking its version.
func Type(b []byte) (byte, error) {
	if len(b) < 2 {
		return 0, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	if b[0] != TypeSnapshot && b[0] != TypeDelta {
		return 0, fmt.Errorf("%w: unknown type 0x%02x", ErrMalformed, b[0])
	}
	if b[1] != WireVersion {
		return 0, fmt.Errorf("%w: unsupported version %d", ErrMalformed, b[1])
	}
	return b[0], nil
}

// Marshal appends the snapshot's encoding to dst.
func (s *Snapshot) Marshal(dst []byte) []byte {
	dst = append(dst, TypeSnapshot, WireVersion)
	dst = binary.AppendUvarint(dst, s.Epoch)
	dst = binary.AppendUvarint(dst, s.Seq)
	dst = append(dst, byte(len(s.Filters)))
	for _, f := range s.Filters {
		dst = append(dst, byte(f.Medium))
		dst = binary.AppendUvarint(dst, f.Count)
		dst = binary.AppendUvarint(dst, f.M)
		dst = append(dst, f.K)
		for _, w := range f.Words {
			dst = binary.LittleEndian.AppendUint64(dst, w)
		}
		dst = binary.AppendUvarint(dst, uint64(len(f.Gone)))
		for _, k := range f.Gone {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(k))
		}
	}
	return dst
}

// Marshal appends the delta's encoding to dst. Consecutive changes of the
// same kind to the same medium share one run header (the medium byte, with
// the high bit set for removals, and the run length).
func (d *Delta) Marshal(dst []byte) []byte {
	dst = append(dst, TypeDelta, WireVersion)
	dst = binary.AppendUvarint(dst, d.Epoch)
	dst = binary.AppendUvarint(dst, d.Seq)
	dst = binary.AppendUvarint(dst, uint64(d.Oldest))
	cs := d.Changes
	for i := 0; i < len(cs); {
		j := i
		for j < len(cs) && cs[j].Medium == cs[i].Medium && cs[j].Removed == cs[i].Removed {
			j++
		}
		head := byte(cs[i].Medium)
		if cs[i].Removed {
			head |= removedRun
		}
		dst = append(dst, head)
		dst = binary.AppendUvarint(dst, uint64(j-i))
		for _, c := range cs[i:j] {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(c.Key))
		}
		i = j
	}
	return dst
}

// DeltaSize returns the encoded size of a delta with n changes in one run
// and the given header values; used to cut deltas to a packet budget.
func DeltaSize(epoch, seq uint64, oldest int64, n int) int {
	var tmp [binary.MaxVarintLen64]byte
	size := 2 + len(binary.AppendUvarint(tmp[:0], epoch)) + len(binary.AppendUvarint(tmp[:0], seq)) +
		len(binary.AppendUvarint(tmp[:0], uint64(oldest)))
	return size + 1 + len(binary.AppendUvarint(tmp[:0], uint64(n))) + KeySize*n
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad %s", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte1(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.fail("truncated %s", what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// UnmarshalSnapshot decodes a snapshot message.
func UnmarshalSnapshot(b []byte) (*Snapshot, error) {
	t, err := Type(b)
	if err != nil {
		return nil, err
	}
	if t != TypeSnapshot {
		return nil, fmt.Errorf("%w: type 0x%02x is not a snapshot", ErrMalformed, t)
	}
	r := &reader{b: b[2:]}
	s := &Snapshot{Epoch: r.uvarint("epoch"), Seq: r.uvarint("seq")}
	n := int(r.byte1("filter count"))
	if n > MaxMedia {
		r.fail("%d filters > %d", n, MaxMedia)
	}
	var seen [MaxMedia]bool
	for i := 0; i < n && r.err == nil; i++ {
		f := Filter{Medium: Medium(r.byte1("medium"))}
		f.Count = r.uvarint("count")
		f.M = r.uvarint("m")
		f.K = r.byte1("k")
		switch {
		case r.err != nil:
		case int(f.Medium) >= MaxMedia || seen[f.Medium]:
			r.fail("bad or repeated medium %d", f.Medium)
		case f.M == 0 || f.M > MaxFilterBits:
			r.fail("filter size %d bits out of range", f.M)
		case f.K == 0 || f.K > MaxHashFuncs:
			r.fail("%d hash functions out of range", f.K)
		}
		if r.err != nil {
			break
		}
		seen[f.Medium] = true
		words := (f.M + 63) / 64
		if uint64(len(r.b)) < words*8 {
			r.fail("truncated filter: need %d words", words)
			break
		}
		f.Words = make([]uint64, words)
		for j := range f.Words {
			f.Words[j] = binary.LittleEndian.Uint64(r.b[8*j:])
		}
		r.b = r.b[words*8:]
		gone := r.uvarint("gone count")
		if r.err == nil && gone > uint64(len(r.b))/KeySize {
			r.fail("%d gone keys do not fit %d bytes", gone, len(r.b))
		}
		if r.err != nil {
			break
		}
		if gone > 0 {
			f.Gone = make([]Key, gone)
			for j := range f.Gone {
				f.Gone[j] = Key(binary.LittleEndian.Uint32(r.b[KeySize*j:]))
			}
			r.b = r.b[gone*KeySize:]
		}
		s.Filters = append(s.Filters, f)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return s, nil
}

// UnmarshalDelta decodes a delta message.
func UnmarshalDelta(b []byte) (*Delta, error) {
	t, err := Type(b)
	if err != nil {
		return nil, err
	}
	if t != TypeDelta {
		return nil, fmt.Errorf("%w: type 0x%02x is not a delta", ErrMalformed, t)
	}
	r := &reader{b: b[2:]}
	d := &Delta{Epoch: r.uvarint("epoch"), Seq: r.uvarint("seq")}
	oldest := r.uvarint("oldest")
	if oldest > math.MaxInt64 {
		r.fail("oldest %d out of range", oldest)
	}
	d.Oldest = int64(oldest)
	for r.err == nil && len(r.b) > 0 {
		head := r.byte1("medium")
		removed := head&removedRun != 0
		m := Medium(head &^ removedRun)
		n := r.uvarint("run length")
		switch {
		case r.err != nil:
		case int(m) >= MaxMedia:
			r.fail("bad medium %d", m)
		case n == 0 || n > uint64(len(r.b))/KeySize:
			r.fail("run of %d hashes does not fit %d bytes", n, len(r.b))
		}
		if r.err != nil {
			break
		}
		if d.Changes == nil {
			d.Changes = make([]Change, 0, n)
		}
		for j := uint64(0); j < n; j++ {
			d.Changes = append(d.Changes, Change{Medium: m, Key: Key(binary.LittleEndian.Uint32(r.b[KeySize*j:])), Removed: removed})
		}
		r.b = r.b[n*KeySize:]
	}
	if r.err != nil {
		return nil, r.err
	}
	return d, nil
}

// PeekOldest returns a delta's Oldest field (Unix nanoseconds) without
// decoding its additions.
func PeekOldest(b []byte) (int64, error) {
	typ, err := Type(b)
	if err != nil {
		return 0, err
	}
	if typ != TypeDelta {
		return 0, fmt.Errorf("%w: type 0x%02x is not a delta", ErrMalformed, typ)
	}
	r := &reader{b: b[2:]}
	r.uvarint("epoch")
	r.uvarint("seq")
	oldest := r.uvarint("oldest")
	if r.err == nil && oldest > math.MaxInt64 {
		r.fail("oldest %d out of range", oldest)
	}
	return int64(oldest), r.err
}

// Peek returns a message's type, epoch and sequence without decoding the
// rest, so a receiver can hold an early delta until the ones before it come.
func Peek(b []byte) (typ byte, epoch, seq uint64, err error) {
	typ, err = Type(b)
	if err != nil {
		return 0, 0, 0, err
	}
	r := &reader{b: b[2:]}
	epoch, seq = r.uvarint("epoch"), r.uvarint("seq")
	return typ, epoch, seq, r.err
}
