package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/inferrail/inferrail/sidecar"
)

func init() {
	register(command{name: "sidecar", summary: "front one engine: proxy, load scrape, KV events, gossip", run: runSidecar})
}

func sidecarFlags() []configFlag[sidecar.Config] {
	str := func(f func(*sidecar.Config) *string) func(*sidecar.Config, string) error {
		return func(c *sidecar.Config, v string) error { *f(c) = v; return nil }
	}
	num := func(f func(*sidecar.Config) *int) func(*sidecar.Config, string) error {
		return func(c *sidecar.Config, v string) error {
			n, err := strconv.Atoi(v)
			*f(c) = n
			return err
		}
	}
	dur := func(f func(*sidecar.Config) *time.Duration) func(*sidecar.Config, string) error {
		return func(c *sidecar.Config, v string) error {
			d, err := time.ParseDuration(v)
			*f(c) = d
			return err
		}
	}
	d := sidecar.DefaultConfig()
	return []configFlag[sidecar.Config]{
		{"engine-url", "engine base URL (default " + d.EngineURL + ")", str(func(c *sidecar.Config) *string { return &c.EngineURL })},
		{"engine", "engine kind: auto, vllm, sglang or llamacpp (default auto)", str(func(c *sidecar.Config) *string { return &c.Engine })},
		{"model", "served model name that seeds block hashes (default: ask the engine's /v1/models)", str(func(c *sidecar.Config) *string { return &c.Model })},
		{"tokenizer", `tokenizer for data-path prompts: "builtin:sim", a model directory, or none (default none)`, str(func(c *sidecar.Config) *string { return &c.Tokenizer })},
		{"block-size", "engine KV block size until the engine reports it (default 16)", num(func(c *sidecar.Config) *int { return &c.BlockSize })},
		{"listen", "data-path address, h2c + HTTP/1.1 (default " + d.Listen + ")", str(func(c *sidecar.Config) *string { return &c.Listen })},
		{"admin", "admin address: /metrics, /healthz, /v1/gossip/*, /v1/summary (default " + d.Admin + ")", str(func(c *sidecar.Config) *string { return &c.Admin })},
		{"shutdown-timeout", "drain bound for in-flight requests on SIGTERM (default 30s)", dur(func(c *sidecar.Config) *time.Duration { return &c.ShutdownTimeout })},
		{"kv-events-endpoint", "engine KV-event PUB endpoint of rank 0, tcp://host:port (default: none, approximate block set)", str(func(c *sidecar.Config) *string { return &c.KVEvents.Endpoint })},
		{"kv-events-replay-endpoint", "engine KV-event replay (ROUTER) endpoint of rank 0", str(func(c *sidecar.Config) *string { return &c.KVEvents.ReplayEndpoint })},
		{"kv-events-topic", "KV-event topic filter", str(func(c *sidecar.Config) *string { return &c.KVEvents.Topic })},
		{"data-parallel-size", "engine data-parallel ranks to subscribe to (default 1)", num(func(c *sidecar.Config) *int { return &c.KVEvents.DataParallelSize })},
		{"kv-events-silent-grace", "traffic without any event batch for this long means the engine publishes none (default 10s)", dur(func(c *sidecar.Config) *time.Duration { return &c.KVEvents.SilentGrace })},
		{"scrape-interval", "engine metrics scrape period (default 100ms)", dur(func(c *sidecar.Config) *time.Duration { return &c.Scrape.Interval })},
		{"gossip-bind", "gossip bind IP:port (default " + d.Gossip.Bind + ")", str(func(c *sidecar.Config) *string { return &c.Gossip.Bind })},
		{"gossip-advertise", "gossip advertise IP or IP:port (default: $POD_IP, else the bind address)", str(func(c *sidecar.Config) *string { return &c.Gossip.Advertise })},
		{"node-name", "gossip node name (default: $POD_NAME, else the host name and the gossip port)", str(func(c *sidecar.Config) *string { return &c.Gossip.NodeName })},
		{"join", "comma-separated gossip seeds host:port", func(c *sidecar.Config, v string) error {
			c.Gossip.Join = splitList(v)
			return nil
		}},
		{"gossip-key-file", "file with the gossip encryption key (base64 or raw 16/24/32 bytes)", str(func(c *sidecar.Config) *string { return &c.Gossip.KeyFile })},
		{"cluster-label", "gossip cluster label", str(func(c *sidecar.Config) *string { return &c.Gossip.ClusterLabel })},
		{"gossip-profile", "gossip timings: lan or local (default lan)", str(func(c *sidecar.Config) *string { return &c.Gossip.Profile })},
		{"otlp-endpoint", "OTLP/HTTP collector URL for traces, e.g. http://127.0.0.1:4318 (default: none, tracing off)", str(func(c *sidecar.Config) *string { return &c.Observability.OTLPEndpoint })},
		{"trace-sample-ratio", "share of new traces sampled, 0..1 (default 0.1)", func(c *sidecar.Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			c.Observability.SampleRatio = f
			return err
		}},
	}
}

func runSidecar(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return serve(ctx, args, stderr, component[sidecar.Config, *sidecar.Sidecar]{
		name:        "sidecar",
		configUsage: "YAML config file; flags override its values",
		defaults:    sidecar.DefaultConfig,
		loadFile:    sidecar.LoadConfigFile,
		flags:       sidecarFlags(),
		finish: func(c *sidecar.Config) error {
			c.ApplyEnv(os.Getenv)
			if err := c.Validate(); err != nil {
				return fmt.Errorf("invalid config:\n%w", err)
			}
			return nil
		},
		newRunner: sidecar.New,
	})
}
