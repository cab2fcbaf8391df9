// Package freeport hands out loopback ports for processes a test or the
// local dev fleet starts, which must be told their ports before they bind.
//
// Listening on port 0 and closing the listener is racy: the kernel hands the
// same port out again as the source port of any outgoing connection (from
// the ephemeral range), so the process told to bind it may find it taken.
// The ports here come from below the kernel's ephemeral range, are checked
// free for TCP and UDP (gossip binds both), and are never handed out twice
// by one process.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the smallest port handed out.
const lowest = 10000

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Get returns a port free on 127.0.0.1 for TCP and UDP right now.
func Get() (int, error) {
	hi := ephemeralLow() - 1
	if hi <= lowest {
		return 0, fmt.Errorf("freeport: the ephemeral range starts at %d: no ports below it", hi+1)
	}
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		p := lowest + rand.IntN(hi-lowest+1)
		if given[p] || !free(p) {
			continue
		}
		given[p] = true
		return p, nil
	}
	return 0, errors.New("freeport: no free port found in 1000 tries")
}

// free reports whether p can be bound on 127.0.0.1 for TCP and UDP.
func free(p int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	pc.Close()
	return true
}

// ephemeralLow returns the start of the kernel's ephemeral port range
// (Linux's default 32768 when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 0 {
		return 32768
	}
	return n
}
