package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/gossip"
)

// TestMembers runs the command against an httptest server serving a real
// node's gossip handler.
func TestMembers(t *testing.T) {
	cfg := gossip.DefaultConfig()
	cfg.NodeName = "bal-test"
	cfg.Role = gossip.RoleBalancer
	cfg.BindAddr = "127.0.0.1"
	cfg.BindPort = 0
	cfg.Meta.Version = "v-test"
	n, err := gossip.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	srv := httptest.NewServer(n.Handler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	tests := []struct {
		name     string
		args     []string
		wantCode int
		check    func(t *testing.T, out string)
	}{
		{name: "table", args: []string{"members", "--addr", addr}, check: func(t *testing.T, out string) {
			for _, want := range []string{"NAME", "bal-test *", "balancer", "alive"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		}},
		{name: "json", args: []string{"members", "--addr", srv.URL, "--json"}, check: func(t *testing.T, out string) {
			var v gossip.ClusterView
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if v.Members.Self != "bal-test" || len(v.Members.Members) != 1 || v.Members.Members[0].Meta.Version != "v-test" {
				t.Errorf("view = %+v", v.Members)
			}
		}},
		{name: "unreachable", args: []string{"members", "--addr", "127.0.0.1:1", "--timeout", "2s"}, wantCode: 1},
		{name: "bad flag", args: []string{"members", "--nope"}, wantCode: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runMain(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if tc.check != nil {
				tc.check(t, stdout.String())
			}
		})
	}
}
