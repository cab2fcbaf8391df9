// Package redistest starts a real redis-server (Debian's, installed by
// scripts/redis.sh) for tests and benchmarks: on a free loopback port, with a
// temporary directory, no snapshots and no append-only file. A test that
// cannot start it fails; it never skips.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// guard bounds the wait for the server to answer PING: a hang guard, not a
// timing assertion.
const guard = 30 * time.Second

// Server is a running redis-server.
type Server struct {
	// Addr is its 127.0.0.1:port.
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// Start starts a redis-server and stops it when tb ends. It fails tb when
// redis-server is missing (run scripts/redis.sh) or does not answer.
func Start(tb testing.TB) *Server {
	tb.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server is not installed (run scripts/redis.sh, or make fixtures): %v", err)
	}
	dir := tb.TempDir()
	// redis-server has no --port 0: pick a port that is free now and retry
	// on the rare race with another process.
	var last error
	for range 5 {
		port := freePort(tb)
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{}), log: filepath.Join(dir, "redis.log")}
		s.cmd = exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--logfile", s.log, "--daemonize", "no", "--protected-mode", "no")
		if err := s.cmd.Start(); err != nil {
			tb.Fatalf("start redis-server: %v", err)
		}
		go func() { _ = s.cmd.Wait(); close(s.done) }()
		if last = s.waitReady(); last == nil {
			tb.Cleanup(s.Stop)
			return s
		}
		s.Stop()
	}
	tb.Fatalf("redis-server did not start: %v", last)
	return nil
}

// Stop kills the server and waits for it to exit. Idempotent.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

func (s *Server) waitReady() error {
	deadline := time.Now().Add(guard)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("redis-server exited: %s", b)
		default:
		}
		if last = ping(s.Addr); last == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond) // polling the server's readiness
	}
	return last
}

// ping sends PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
