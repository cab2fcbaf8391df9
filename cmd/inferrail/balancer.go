package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/balancer"
)

func init() {
	register(command{name: "balancer", summary: "route OpenAI requests to the replica that holds their prefix", run: runBalancer})
}

func balancerFlags() []configFlag[balancer.Config] {
	d := balancer.DefaultConfig()
	// set wraps a setter that cannot fail.
	set := func(f func(c *balancer.Config, v string)) func(*balancer.Config, string) error {
		return func(c *balancer.Config, v string) error { f(c, v); return nil }
	}
	return []configFlag[balancer.Config]{
		{"listen", "client address, HTTP/1.1 + h2c (default " + d.Listen + ")", set(func(c *balancer.Config, v string) { c.Listen = v })},
		{"admin", "admin address: /metrics, /healthz, /v1/gossip/* (default " + d.Admin + ")", set(func(c *balancer.Config, v string) { c.Admin = v })},
		{"gossip-bind", "gossip bind IP:port (default " + d.Gossip.Bind + "); enables the gossip", set(func(c *balancer.Config, v string) {
			c.Gossip.Bind, c.Gossip.Enabled = v, true
		})},
		{"gossip-advertise", "gossip advertise IP or IP:port (default: the bind address; on Kubernetes $(POD_IP))", set(func(c *balancer.Config, v string) { c.Gossip.Advertise = v })},
		{"join", "comma-separated gossip seeds host:port", set(func(c *balancer.Config, v string) { c.Gossip.Join = splitList(v) })},
		{"gossip-key-file", "file with the gossip encryption key (base64 or raw 16/24/32 bytes)", set(func(c *balancer.Config, v string) { c.Gossip.KeyFile = v })},
		{"node-name", "gossip node name (default: the host name, \"-balancer\" and the gossip port)", set(func(c *balancer.Config, v string) { c.Gossip.NodeName = v })},
		{"gossip-profile", "gossip timings: lan or local (default lan)", set(func(c *balancer.Config, v string) { c.Gossip.Profile = v })},
		{"otlp-endpoint", "OTLP/HTTP collector URL for traces, e.g. http://127.0.0.1:4318 (default: none, tracing off)", set(func(c *balancer.Config, v string) { c.Observability.OTLPEndpoint = v })},
		{"epp", "serve the Gateway API Inference Extension endpoint picker (Envoy ext_proc v3 gRPC) on ADDR, e.g. :9002 (docs/epp.md)", set(func(c *balancer.Config, v string) { c.EPP.Listen = v })},
	}
}

func runBalancer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// SIGHUP reloads the config instead of ending the process; caught from
	// the start so one sent while the balancer loads is kept for it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return serve(ctx, args, stderr, component[balancer.Config, *balancer.Balancer]{
		name:        "balancer",
		configUsage: "YAML config file (see deploy/inferrail.example.yaml); flags override its values",
		defaults:    balancer.DefaultConfig,
		loadFile:    balancer.LoadConfigFile,
		flags:       balancerFlags(),
		newRunner: func(c balancer.Config, log *slog.Logger, reg *prometheus.Registry) (*balancer.Balancer, error) {
			return balancer.New(c, log, reg)
		},
		started: func(b *balancer.Balancer, load func() (balancer.Config, error)) {
			b.SetReloadSource(load)
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
		},
	})
}
