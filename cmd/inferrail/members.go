package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/inferrail/inferrail/gossip"
)

func init() {
	register(command{name: "members", summary: "print a node's view of the gossip cluster", run: runMembers})
}

func runMembers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("members", "--addr HOST:ADMINPORT [--json]", stderr)
	addr := fs.String("addr", "127.0.0.1:9090", "admin address (host:port or URL) of any inferrail node (balancer default 127.0.0.1:9090, sidecar 127.0.0.1:9100)")
	asJSON := fs.Bool("json", false, "print the raw view as JSON")
	timeout := fs.Duration("timeout", 5*time.Second, "request timeout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	view, err := gossip.Fetch(ctx, &http.Client{}, *addr)
	if err != nil {
		return fmt.Errorf("query %s: %w", *addr, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(view)
	}
	return view.WriteTable(stdout)
}
