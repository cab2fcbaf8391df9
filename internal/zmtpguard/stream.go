package zmtpguard

import "math"

// greetingLen is the size of the ZMTP 3.x greeting (signature, version,
// mechanism, as-server, filler): https://rfc.zeromq.org/spec/23/.
const greetingLen = 64

// Frame flag bits (ZMTP 3.x, rfc.zeromq.org/spec/23 and zmq4 protocol.go).
const (
	flagMore    = 0x1
	flagLong    = 0x2
	flagCommand = 0x4
)

type state uint8

const (
	stFlags state = iota // next byte is a frame's flags
	stSize               // reading the 1- or 8-byte length
	stBody               // skipping the body
)

// stream follows the bytes a peer sends on one connection: the greeting,
// then frames. It never buffers: it keeps only the position in the current
// frame and the size of the current message.
type stream struct {
	limit uint64

	greeted int // greeting bytes seen, up to greetingLen
	st      state
	flags   byte
	need    int    // length bytes still to read in stSize
	size    uint64 // the length being read
	body    uint64 // body bytes still to skip in stBody
	msg     uint64 // size of the message so far (bodies + overhead)

	// commands counts the command frames completed; the first one ends the
	// NULL mechanism's handshake (the peer's READY).
	commands int
}

func newStream(limit int64) *stream { return &stream{limit: uint64(limit)} }

// feed follows p. It returns a *LimitError (without Remote) when a frame's
// declared length would take its message over the limit; the stream must
// not be fed again after an error.
func (s *stream) feed(p []byte) error {
	for len(p) > 0 {
		if s.greeted < greetingLen {
			n := min(len(p), greetingLen-s.greeted)
			s.greeted += n
			p = p[n:]
			continue
		}
		switch s.st {
		case stFlags:
			s.flags, p = p[0], p[1:]
			s.need, s.size, s.st = 1, 0, stSize
			if s.flags&flagLong != 0 {
				s.need = 8
			}
		case stSize:
			s.size, p = s.size<<8|uint64(p[0]), p[1:]
			if s.need--; s.need > 0 {
				continue
			}
			if s.size > s.limit || s.msg+s.size+FrameOverhead > s.limit {
				declared := s.msg + s.size + FrameOverhead
				if declared < s.size { // wrapped around
					declared = math.MaxUint64
				}
				return &LimitError{Declared: declared, Limit: int64(s.limit)}
			}
			s.msg += s.size + FrameOverhead
			s.body, s.st = s.size, stBody
			if s.body == 0 {
				s.endFrame()
			}
		case stBody:
			n := min(uint64(len(p)), s.body)
			s.body -= n
			p = p[n:]
			if s.body == 0 {
				s.endFrame()
			}
		}
	}
	return nil
}

// endFrame closes the current frame; a frame without the MORE flag ends its
// message (zmq4 reads commands and messages alike until MORE is clear).
func (s *stream) endFrame() {
	if s.flags&flagCommand != 0 {
		s.commands++
	}
	if s.flags&flagMore == 0 {
		s.msg = 0
	}
	s.st = stFlags
}
