package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/inferrail/inferrail/balancer"
)

func init() {
	register(command{name: "explain", summary: "show how a balancer would route a request now, without sending it", run: runExplain})
}

// explainStdin is where `inferrail explain` reads a body given as "-"
// (tests replace it).
var explainStdin io.Reader = os.Stdin

func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("explain", "--addr HOST:ADMINPORT [--route chat|completions] [--json] (--body FILE | < body.json)", stderr)
	addr := fs.String("addr", "127.0.0.1:9090", "admin address (host:port or URL) of a balancer")
	bodyFile := fs.String("body", "-", "file holding a chat or completions request body (-: standard input)")
	route := fs.String("route", "", "chat or completions (default: chat when the body has messages)")
	asJSON := fs.Bool("json", false, "print the explanation as JSON")
	timeout := fs.Duration("timeout", 10*time.Second, "request timeout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var body []byte
	var err error
	if *bodyFile == "-" {
		body, err = io.ReadAll(explainStdin)
	} else {
		body, err = os.ReadFile(*bodyFile)
	}
	if err != nil {
		return fmt.Errorf("read the body: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	raw, ex, err := balancer.FetchExplanation(ctx, &http.Client{}, *addr, *route, body)
	if err != nil {
		return fmt.Errorf("explain at %s: %w", *addr, err)
	}
	if *asJSON {
		_, err := fmt.Fprintf(stdout, "%s\n", raw)
		return err
	}
	return ex.WriteTable(stdout)
}
