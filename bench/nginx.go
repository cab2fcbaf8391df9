package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Nginx baseline modes: nginx's own load-balancing methods.
const (
	NginxRoundRobin = "round_robin"
	NginxLeastConn  = "least_conn"
)

// NginxBinary returns the nginx binary on this machine ("" when none).
func NginxBinary() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	return ""
}

// nginxConf is a minimal nginx config: one upstream over the engines, SSE
// passed through unbuffered, keep-alive to the upstreams.
func nginxConf(dir string, port int, mode string, engines []string) string {
	var up strings.Builder
	if mode == NginxLeastConn {
		up.WriteString("    least_conn;\n")
	}
	for _, e := range engines {
		fmt.Fprintf(&up, "    server %s max_fails=0;\n", strings.TrimPrefix(e, "http://"))
	}
	up.WriteString("    keepalive 256;\n")
	return fmt.Sprintf(`worker_processes 1;
daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  client_max_body_size 64m;
  upstream engines {
%[3]s  }
  server {
    listen 127.0.0.1:%[2]d;
    location / {
      proxy_pass http://engines;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 600s;
    }
  }
}
`, dir, port, up.String())
}

// Nginx is a running nginx baseline.
type Nginx struct {
	URL  string
	cmd  *exec.Cmd
	done chan error
}

// StartNginx starts nginx in mode in front of the engines' base URLs, with
// its files in dir, and waits until it proxies.
func StartNginx(ctx context.Context, dir, mode string, engines []string) (*Nginx, error) {
	bin := NginxBinary()
	if bin == "" {
		return nil, errors.New("nginx not installed (bench/scripts/install-nginx.sh installs it)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("nginx dir: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("nginx port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConf(dir, port, mode, engines)), 0o644); err != nil {
		return nil, fmt.Errorf("nginx config: %w", err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	n := &Nginx{URL: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, done: make(chan error, 1)}
	go func() { n.done <- cmd.Wait(); out.Close() }()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := http.Get(n.URL + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n, nil
			}
		}
		select {
		case err := <-n.done:
			b, _ := os.ReadFile(filepath.Join(dir, "stderr.log"))
			return nil, fmt.Errorf("nginx exited: %v: %s", err, b)
		case <-deadline.C:
			_ = n.Stop()
			return nil, errors.New("nginx did not become ready")
		case <-ctx.Done():
			_ = n.Stop()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// Stop stops nginx gracefully (SIGQUIT), then kills it.
func (n *Nginx) Stop() error {
	_ = n.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-n.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
		return errors.New("nginx did not stop; killed")
	}
}
