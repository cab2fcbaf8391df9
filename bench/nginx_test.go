package bench

import (
	"strings"
	"testing"
)

// The nginx baseline proxies to every engine, streams SSE unbuffered, keeps
// upstream connections alive and uses least_conn only when asked.
func TestNginxConf(t *testing.T) {
	engines := []string{"http://127.0.0.1:8001", "http://127.0.0.1:8002"}
	rr := nginxConf("/tmp/x", 9000, NginxRoundRobin, engines)
	lc := nginxConf("/tmp/x", 9000, NginxLeastConn, engines)
	for _, want := range []string{"server 127.0.0.1:8001 max_fails=0;", "server 127.0.0.1:8002 max_fails=0;", "proxy_buffering off;",
		"listen 127.0.0.1:9000;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`, "keepalive 256;", "daemon off;"} {
		if !strings.Contains(rr, want) || !strings.Contains(lc, want) {
			t.Errorf("config lacks %q", want)
		}
	}
	if strings.Contains(rr, "least_conn") || !strings.Contains(lc, "least_conn;") {
		t.Error("least_conn must appear only in the least_conn config")
	}
	if strings.Count(rr, "{") != strings.Count(rr, "}") {
		t.Error("unbalanced braces")
	}
}
