package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/inferrail/inferrail/balancer"
)

func init() {
	register(command{name: "balancer", summary: "route OpenAI requests to the replica that holds their prefix", run: runBalancer})
}

// balancerFlag is one flag that overrides a config field when given.
type balancerFlag struct {
	name, usage string
	set         func(c *balancer.Config, v string)
}

func balancerFlags() []balancerFlag {
	d := balancer.DefaultConfig()
	list := func(v string) []string {
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return []balancerFlag{
		{"listen", "client address, HTTP/1.1 + h2c (default " + d.Listen + ")", func(c *balancer.Config, v string) { c.Listen = v }},
		{"admin", "admin address: /metrics, /healthz, /v1/gossip/* (default " + d.Admin + ")", func(c *balancer.Config, v string) { c.Admin = v }},
		{"gossip-bind", "gossip bind IP:port (default " + d.Gossip.Bind + "); enables the gossip", func(c *balancer.Config, v string) {
			c.Gossip.Bind, c.Gossip.Enabled = v, true
		}},
		{"gossip-advertise", "gossip advertise IP or IP:port (default: the bind address; on Kubernetes $(POD_IP))", func(c *balancer.Config, v string) { c.Gossip.Advertise = v }},
		{"join", "comma-separated gossip seeds host:port", func(c *balancer.Config, v string) { c.Gossip.Join = list(v) }},
		{"gossip-key-file", "file with the gossip encryption key (base64 or raw 16/24/32 bytes)", func(c *balancer.Config, v string) { c.Gossip.KeyFile = v }},
		{"node-name", "gossip node name (default: the host name, \"-balancer\" and the gossip port)", func(c *balancer.Config, v string) { c.Gossip.NodeName = v }},
		{"gossip-profile", "gossip timings: lan or local (default lan)", func(c *balancer.Config, v string) { c.Gossip.Profile = v }},
		{"otlp-endpoint", "OTLP/HTTP collector URL for traces, e.g. http://127.0.0.1:4318 (default: none, tracing off)", func(c *balancer.Config, v string) { c.Observability.OTLPEndpoint = v }},
		{"epp", "serve the Gateway API Inference Extension endpoint picker (Envoy ext_proc v3 gRPC) on ADDR, e.g. :9002 (docs/epp.md)", func(c *balancer.Config, v string) { c.EPP.Listen = v }},
	}
}

// loadBalancerConfig reads the config file (if any) and applies the flags.
func loadBalancerConfig(path string, overrides []func(*balancer.Config)) (balancer.Config, error) {
	cfg := balancer.DefaultConfig()
	if path != "" {
		var err error
		if cfg, err = balancer.LoadConfigFile(path); err != nil {
			return cfg, err
		}
	}
	for _, o := range overrides {
		o(&cfg)
	}
	return cfg, nil
}

func runBalancer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// SIGHUP reloads the config instead of ending the process; caught from
	// the start so one sent while the balancer loads is kept for it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	fs := newFlagSet("balancer", "[--config FILE] [flags]", stderr)
	configFile := fs.String("config", "", "YAML config file (see deploy/inferrail.example.yaml); flags override its values")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	var overrides []func(*balancer.Config)
	for _, f := range balancerFlags() {
		fs.Func(f.name, f.usage, func(v string) error {
			overrides = append(overrides, func(c *balancer.Config) { f.set(c, v) })
			return nil
		})
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := loadBalancerConfig(*configFile, overrides)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	b, err := balancer.New(cfg, log, reg)
	if err != nil {
		return err
	}
	b.SetReloadSource(func() (balancer.Config, error) { return loadBalancerConfig(*configFile, overrides) })
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_, _ = b.ReloadFromSource() // logged by the balancer
			}
		}
	}()
	return b.Run(ctx)
}
