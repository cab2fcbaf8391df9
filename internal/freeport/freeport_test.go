package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Ports handed out are below the ephemeral range, distinct, and bindable.
func TestGet(t *testing.T) {
	seen := map[int]bool{}
	low := ephemeralLow()
	for range 50 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if p < lowest || p >= low || seen[p] {
			t.Fatalf("port %d: outside [%d, %d) or handed out twice", p, lowest, low)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d not bindable: %v", p, err)
		}
		ln.Close()
	}
}
