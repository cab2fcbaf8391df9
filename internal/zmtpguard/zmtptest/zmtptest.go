// Package zmtptest speaks just enough ZMTP 3.0 (NULL mechanism) over a raw
// connection to play a hostile peer in tests: greet, send READY, then send
// whatever frame headers a test wants.
package zmtptest

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

// Greeting returns a ZMTP 3.0 greeting for the NULL mechanism
// (rfc.zeromq.org/spec/23).
func Greeting(asServer bool) []byte {
	g := make([]byte, 64)
	g[0], g[9] = 0xff, 0x7f
	g[10], g[11] = 3, 0
	copy(g[12:32], "NULL")
	if asServer {
		g[32] = 1
	}
	return g
}

// Ready returns a READY command frame announcing socketType ("PUB", "SUB",
// "ROUTER", "DEALER").
func Ready(socketType string) []byte {
	body := []byte{5}
	body = append(body, "READY"...)
	body = append(body, byte(len("Socket-Type")))
	body = append(body, "Socket-Type"...)
	body = binary.BigEndian.AppendUint32(body, uint32(len(socketType)))
	body = append(body, socketType...)
	return append([]byte{0x04, byte(len(body))}, body...)
}

// LongFrameHeader returns the header of a final long message frame that
// declares size bytes.
func LongFrameHeader(size uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{0x02}, size)
}

// Handshake greets the peer on c and sends READY as socketType, then reads
// the peer's greeting and READY (which it discards).
func Handshake(c net.Conn, socketType string, asServer bool) error {
	if _, err := c.Write(append(Greeting(asServer), Ready(socketType)...)); err != nil {
		return fmt.Errorf("send greeting: %w", err)
	}
	var g [64]byte
	if _, err := io.ReadFull(c, g[:]); err != nil {
		return fmt.Errorf("read greeting: %w", err)
	}
	var h [2]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return fmt.Errorf("read ready header: %w", err)
	}
	if h[0] != 0x04 {
		return fmt.Errorf("peer's first frame has flags %#x, want a short command", h[0])
	}
	if _, err := io.CopyN(io.Discard, c, int64(h[1])); err != nil {
		return fmt.Errorf("read ready: %w", err)
	}
	return nil
}
