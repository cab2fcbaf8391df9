// Package staleconntest provides an HTTP/1.1 server that closes a kept-alive
// connection under a request, for tests of internal/staleconn and its users.
package staleconntest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// Server is an HTTP/1.1 server that, like llama.cpp's when its idle timeout
// fires just as a request is written, reads the DropAt-th request of its
// first connection and closes the connection without a byte of answer.
// Every other request gets a 200 with the request's body echoed.
type Server struct {
	ln     net.Listener
	dropAt int

	mu       sync.Mutex // protects the fields below
	conns    int
	requests []string
}

// Start starts a server that drops the dropAt-th request of its first
// connection (1: the very first request, on a fresh connection); it stops
// with the test.
func Start(t testing.TB, dropAt int) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln, dropAt: dropAt}
	t.Cleanup(func() { ln.Close() })
	go s.serve()
	return s
}

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Seen lists every request read, as "connection/request body" ("2/1 x" is
// the first request of the second connection, with body x).
func (s *Server) Seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *Server) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns++
		id := s.conns
		s.mu.Unlock()
		go s.handle(c, id)
	}
}

func (s *Server) handle(c net.Conn, id int) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		s.mu.Lock()
		s.requests = append(s.requests, fmt.Sprintf("%d/%d %s", id, n, body))
		s.mu.Unlock()
		if id == 1 && n == s.dropAt {
			return // closed before any response byte
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}
