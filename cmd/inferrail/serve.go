package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// configFlag is one flag that overrides a field of a component's config C
// when given.
type configFlag[C any] struct {
	name, usage string
	set         func(c *C, v string) error
}

// runner is a long-running component: Run serves until ctx ends.
type runner interface {
	Run(ctx context.Context) error
}

// component is what a long-running subcommand (balancer, sidecar) tells
// serve about itself. C is its config, R what New builds from it.
type component[C any, R runner] struct {
	// name is the subcommand; configUsage the --config flag's usage.
	name, configUsage string
	// defaults and loadFile give the config before the flags: the defaults,
	// or the file named by --config (decoded over the defaults).
	defaults func() C
	loadFile func(path string) (C, error)
	flags    []configFlag[C]
	// finish, when set, completes the config once the flags are applied at
	// start-up (the sidecar's environment variables and its Validate).
	finish func(*C) error
	// newRunner builds the component from its config, with the registry
	// its /metrics serves.
	newRunner func(C, *slog.Logger, *prometheus.Registry) (R, error)
	// started, when set, is called with the component before Run, and with
	// load, which reads the file again and applies the same flags (the
	// balancer's reload on SIGHUP).
	started func(r R, load func() (C, error))
}

// serve is the start-up flow of a long-running subcommand: it parses args
// (--config, --log-level and the component's flags), builds the logger, the
// config (file or defaults, then the flags in order, then finish), a registry
// with the Go and process collectors, and the component, and runs it until
// ctx ends.
func serve[C any, R runner](ctx context.Context, args []string, stderr io.Writer, c component[C, R]) error {
	fs := newFlagSet(c.name, "[--config FILE] [flags]", stderr)
	configFile := fs.String("config", "", c.configUsage)
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	var overrides []func(*C) error
	for _, f := range c.flags {
		fs.Func(f.name, f.usage, func(v string) error {
			overrides = append(overrides, func(cfg *C) error {
				if err := f.set(cfg, v); err != nil {
					return fmt.Errorf("--%s %q: %w", f.name, v, err)
				}
				return nil
			})
			return nil
		})
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := levelLogger(*logLevel, stderr)
	if err != nil {
		return err
	}
	load := func() (C, error) {
		cfg := c.defaults()
		if *configFile != "" {
			var err error
			if cfg, err = c.loadFile(*configFile); err != nil {
				return cfg, err
			}
		}
		for _, o := range overrides {
			if err := o(&cfg); err != nil {
				return cfg, err
			}
		}
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	if c.finish != nil {
		if err := c.finish(&cfg); err != nil {
			return err
		}
	}
	r, err := c.newRunner(cfg, log, processRegistry())
	if err != nil {
		return err
	}
	if c.started != nil {
		c.started(r, load)
	}
	return r.Run(ctx)
}

// levelLogger returns a text logger on stderr at the named level (the
// --log-level flag: debug, info, warn or error).
func levelLogger(name string, stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(name)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}

// processRegistry returns a registry with the Go runtime and process
// collectors, for a component's /metrics.
func processRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// splitList returns the non-empty, trimmed entries of a comma-separated flag
// value (nil for none).
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
