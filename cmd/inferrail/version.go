package main

import (
	"context"
	"fmt"
	"io"

	"github.com/inferrail/inferrail/internal/buildinfo"
)

func init() {
	register(command{name: "version", summary: "print the version", run: runVersion})
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "inferrail %s\n", buildinfo.Version())
	return err
}
