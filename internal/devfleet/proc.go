package devfleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/inferrail/inferrail/internal/freeport"
)

// proc is one child process.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // valid after done
}

// startProc starts bin with args, its output in logDir/name.log.
func startProc(bin, logDir, name string, args ...string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM, waits up to timeout, then kills.
func (p *proc) stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %v; killed", p.name, timeout)
	}
}

// exited reports an error if the process has ended.
func (p *proc) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v (log %s)", p.name, p.err, p.log)
	default:
		return nil
	}
}

// freePort returns a loopback port free for TCP and UDP now, from below the
// kernel's ephemeral range (internal/freeport: a port from listening on :0
// may be taken again as a connection's source port before the child binds).
func freePort() (int, error) { return freeport.Get() }

// freeUDPTCPPort returns a port free for both TCP and UDP (gossip uses both).
func freeUDPTCPPort() (int, error) { return freeport.Get() }

// waitOK polls url until it answers 200 or ctx ends; each process in watch
// must stay alive meanwhile.
func waitOK(ctx context.Context, url string, watch ...*proc) error {
	return poll(ctx, func() error {
		for _, p := range watch {
			if err := p.exited(); err != nil {
				return stopPolling{err}
			}
		}
		// Bounded: a free port another program took between our choice and
		// the child's bind may accept and never answer; the child's exit
		// must still be seen on the next poll.
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
		if err != nil {
			return stopPolling{err}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	})
}

// stopPolling wraps an error that ends a poll at once.
type stopPolling struct{ err error }

func (s stopPolling) Error() string { return s.err.Error() }

// poll calls cond every 50 ms until it returns nil, a stopPolling, or ctx
// ends (then the last error is returned).
func poll(ctx context.Context, cond func() error) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		var sp stopPolling
		if errors.As(err, &sp) {
			return sp.err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-t.C:
		}
	}
}
