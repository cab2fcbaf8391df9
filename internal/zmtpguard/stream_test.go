package zmtpguard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/inferrail/inferrail/internal/zmtpguard/zmtptest"
)

func short(flags byte, body []byte) []byte { return append([]byte{flags, byte(len(body))}, body...) }

func long(flags byte, body []byte) []byte {
	return append(binary.BigEndian.AppendUint64([]byte{flags | flagLong}, uint64(len(body))), body...)
}

func TestStream(t *testing.T) {
	greet := append(zmtptest.Greeting(false), zmtptest.Ready("SUB")...)
	big := bytes.Repeat([]byte{1}, 700)
	for _, tc := range []struct {
		name      string
		limit     int64
		in        []byte
		wantErr   bool
		wantCmds  int
		declared  uint64
		chunkSize int // feed in chunks of this size (0: all at once)
	}{
		{name: "handshake only", limit: 1024, in: greet, wantCmds: 1},
		{name: "short and long frames under the limit", limit: 1024,
			in: cat(greet, short(flagMore, []byte("topic")), long(flagMore, make([]byte, 8)), long(0, big)), wantCmds: 1},
		{name: "byte by byte", limit: 1024, chunkSize: 1,
			in: cat(greet, short(flagMore, []byte("topic")), long(0, big), short(0, nil)), wantCmds: 1},
		{name: "one huge frame header", limit: 1024, in: cat(greet, zmtptest.LongFrameHeader(1<<40)),
			wantErr: true, declared: 1<<40 + 64},
		{name: "huge header split over reads", limit: 1024, chunkSize: 3, in: cat(greet, zmtptest.LongFrameHeader(1<<40)),
			wantErr: true, declared: 1<<40 + 64},
		{name: "frames that add up over the limit", limit: 1024,
			in: cat(greet, long(flagMore, big), long(0, big)), wantErr: true, declared: 700 + 64 + 700 + 64},
		{name: "the limit is per message", limit: 1024,
			in: cat(greet, long(0, big), long(0, big), long(0, big)), wantCmds: 1},
		{name: "many empty frames count their overhead", limit: 1024,
			in: cat(greet, bytes.Repeat(short(flagMore, nil), 17)), wantErr: true, declared: 17 * 64},
		{name: "a huge command", limit: 1024, in: cat(zmtptest.Greeting(false), []byte{flagCommand | flagLong},
			binary.BigEndian.AppendUint64(nil, 1<<62)), wantErr: true, declared: 1<<62 + 64},
		{name: "maximum length", limit: 1 << 20, in: cat(greet, zmtptest.LongFrameHeader(1<<64-1)),
			wantErr: true, declared: 1<<64 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStream(tc.limit)
			var err error
			in := tc.in
			for len(in) > 0 && err == nil {
				n := len(in)
				if tc.chunkSize > 0 {
					n = min(n, tc.chunkSize)
				}
				err, in = s.feed(in[:n]), in[n:]
			}
			var le *LimitError
			if got := errors.As(err, &le); got != tc.wantErr {
				t.Fatalf("feed error = %v, want a LimitError: %v", err, tc.wantErr)
			}
			if tc.wantErr && le.Declared != tc.declared {
				t.Errorf("Declared = %d, want %d", le.Declared, tc.declared)
			}
			if !tc.wantErr && s.commands != tc.wantCmds {
				t.Errorf("commands = %d, want %d", s.commands, tc.wantCmds)
			}
		})
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// FuzzStream checks that the stream never lets a frame through whose
// declared size exceeds the limit, however the input is split.
func FuzzStream(f *testing.F) {
	greet := append(zmtptest.Greeting(false), zmtptest.Ready("SUB")...)
	f.Add(cat(greet, long(0, make([]byte, 100))), uint8(7))
	f.Add(cat(greet, zmtptest.LongFrameHeader(1<<40)), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		const limit = 256
		s := newStream(limit)
		var err error
		for len(in) > 0 && err == nil {
			n := min(len(in), int(chunk)+1)
			err, in = s.feed(in[:n]), in[n:]
			if err == nil && s.st == stBody && s.body > limit {
				t.Fatalf("accepted a frame body of %d bytes over the limit %d", s.body, limit)
			}
			if s.msg > limit {
				t.Fatalf("message reached %d bytes, over the limit %d", s.msg, limit)
			}
		}
	})
}
