package balancer

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A request whose small body stalls gets its 400 when timeouts.read_body
// expires and its connection closed; it never hangs (the server must not try
// to drain the rest of the body on a connection with no read deadline).
func TestStalledBodyIsAnsweredAndClosed(t *testing.T) {
	up := newUpstream(t, okHandler)
	cfg := testConfig(up.srv.URL)
	cfg.Timeouts.ReadBody = 200 * time.Millisecond
	_, srv := newTestBalancer(t, cfg)
	for _, tc := range []struct {
		name string
		sent string // body bytes sent before the stall
	}{{"one byte then silence", "{"}, {"nothing", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// The test's own guard against a hang: far beyond read_body.
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n%s", tc.sent)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no response: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"error"`) {
				t.Errorf("got %d %s, want a 400 in the OpenAI error shape", resp.StatusCode, body)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the answer the connection stayed open (read: %v)", err)
			}
		})
	}
}
