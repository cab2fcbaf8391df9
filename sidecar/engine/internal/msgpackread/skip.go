package msgpackread

import (
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Skip consumes the next value, however nested, without recursion and without
// allocating for its contents.
func (r *Reader) Skip() error {
	p := r.pos()
	b := r.buf
	pending := 1
	for pending > 0 {
		if p >= len(b) {
			return io.ErrUnexpectedEOF
		}
		pending--
		c := b[p]
		p++
		var extra, items int
		switch {
		case msgpcode.IsFixedNum(c), c == msgpcode.Nil, c == msgpcode.False, c == msgpcode.True:
		case msgpcode.IsFixedMap(c):
			items = 2 * int(c&msgpcode.FixedMapMask)
		case msgpcode.IsFixedArray(c):
			items = int(c & msgpcode.FixedArrayMask)
		case msgpcode.IsFixedString(c):
			extra = int(c & msgpcode.FixedStrMask)
		default:
			var err error
			extra, items, p, err = skipHeader(b, p, c)
			if err != nil {
				return err
			}
		}
		if extra > len(b)-p {
			return ErrTruncated
		}
		p += extra
		if items > len(b)-p {
			return ErrTruncated
		}
		pending += items
	}
	if _, err := r.br.Seek(int64(p), io.SeekStart); err != nil {
		return err
	}
	return nil
}

// skipHeader decodes the header of a non-fixed value whose code c was read
// at b[p-1]; it returns payload bytes to skip, child items and the position
// after the header.
func skipHeader(b []byte, p int, c byte) (extra, items, np int, err error) {
	be := func(n int) (int, error) {
		if len(b)-p < n {
			return 0, ErrTruncated
		}
		var v int
		for _, x := range b[p : p+n] {
			v = v<<8 | int(x)
		}
		p += n
		return v, nil
	}
	var v int
	switch c {
	case msgpcode.Uint8, msgpcode.Int8:
		extra = 1
	case msgpcode.Uint16, msgpcode.Int16:
		extra = 2
	case msgpcode.Uint32, msgpcode.Int32, msgpcode.Float:
		extra = 4
	case msgpcode.Uint64, msgpcode.Int64, msgpcode.Double:
		extra = 8
	case msgpcode.Bin8, msgpcode.Str8:
		v, err = be(1)
		extra = v
	case msgpcode.Bin16, msgpcode.Str16:
		v, err = be(2)
		extra = v
	case msgpcode.Bin32, msgpcode.Str32:
		v, err = be(4)
		extra = v
	case msgpcode.Array16:
		v, err = be(2)
		items = v
	case msgpcode.Array32:
		v, err = be(4)
		items = v
	case msgpcode.Map16:
		v, err = be(2)
		items = 2 * v
	case msgpcode.Map32:
		v, err = be(4)
		items = 2 * v
	case msgpcode.FixExt1:
		extra = 1 + 1
	case msgpcode.FixExt2:
		extra = 1 + 2
	case msgpcode.FixExt4:
		extra = 1 + 4
	case msgpcode.FixExt8:
		extra = 1 + 8
	case msgpcode.FixExt16:
		extra = 1 + 16
	case msgpcode.Ext8:
		v, err = be(1)
		extra = 1 + v
	case msgpcode.Ext16:
		v, err = be(2)
		extra = 1 + v
	case msgpcode.Ext32:
		v, err = be(4)
		extra = 1 + v
	default:
		err = fmt.Errorf("msgpack: unknown code %#x", c)
	}
	return extra, items, p, err
}

// String returns the type's name.
func (t Type) String() string {
	switch t {
	case Nil:
		return "nil"
	case Bool:
		return "bool"
	case Int:
		return "int"
	case Uint:
		return "uint"
	case Float:
		return "float"
	case Str:
		return "str"
	case Bin:
		return "bin"
	case Array:
		return "array"
	case Map:
		return "map"
	case Ext:
		return "ext"
	}
	return "invalid"
}
