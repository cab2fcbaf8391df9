package devfleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Replica is one simulator and its sidecar.
type Replica struct {
	// Name is the sidecar's gossip node name (what x-inferrail-replica shows).
	Name string
	// EngineURL is the simulator's base URL; its /metrics is the engine page.
	EngineURL string
	// SidecarURL is the sidecar's data address; SidecarAdmin its admin URL.
	SidecarURL, SidecarAdmin string
}

// Balancer is one balancer.
type Balancer struct {
	// URL is the client URL; Admin the admin URL.
	URL, Admin string
}

// Cluster is a running local fleet of child processes: simulators, sidecars
// and balancers.
type Cluster struct {
	cfg       Config
	log       *slog.Logger
	logDir    string
	tmpLogDir bool
	procs     []*proc    // in start order
	tiers     [3][]*proc // simulators, sidecars, balancers

	// Replicas and Balancers describe the running components.
	Replicas  []Replica
	Balancers []Balancer
}

// LogDir returns the directory holding the children's logs.
func (c *Cluster) LogDir() string { return c.logDir }

// EngineMetricsURLs returns every simulator's /metrics URL.
func (c *Cluster) EngineMetricsURLs() []string {
	out := make([]string, len(c.Replicas))
	for i, r := range c.Replicas {
		out[i] = r.EngineURL + "/metrics"
	}
	return out
}

// Start starts the fleet and returns once every balancer sees every replica
// alive with a fresh load report and summary and routes the model. On error,
// whatever started is stopped.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("dev fleet config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the inferrail binary: %w", err)
		}
		cfg.Binary = exe
	}
	c := &Cluster{cfg: cfg, log: log, logDir: cfg.LogDir}
	if c.logDir == "" {
		dir, err := os.MkdirTemp("", "inferrail-dev-")
		if err != nil {
			return nil, fmt.Errorf("log dir: %w", err)
		}
		c.logDir, c.tmpLogDir = dir, true
	} else if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	readyCtx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	if err := c.start(readyCtx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	cfg := c.cfg
	var seed string
	for i := range cfg.Replicas {
		ports := make([]int, 6) // engine, pub, replay, data, admin, gossip
		for j := range ports {
			var err error
			if j == 5 {
				ports[j], err = freeUDPTCPPort()
			} else {
				ports[j], err = freePort()
			}
			if err != nil {
				return err
			}
		}
		engine, pub, replay, data, admin, gport := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
		r := Replica{
			Name:         fmt.Sprintf("replica-%d", i),
			EngineURL:    fmt.Sprintf("http://127.0.0.1:%d", engine),
			SidecarURL:   fmt.Sprintf("http://127.0.0.1:%d", data),
			SidecarAdmin: fmt.Sprintf("http://127.0.0.1:%d", admin),
		}
		simArgs := []string{"sim", "--host", "127.0.0.1", "--port", strconv.Itoa(engine),
			"--served-model-name", cfg.Model, "--enable-prompt-tokens-details",
			"--block-size", strconv.Itoa(cfg.BlockSize), "--log-level", cfg.LogLevel,
			// vLLM binds an endpoint only when it has a wildcard ("*" or "::");
			// "tcp://127.0.0.1:N" would make the simulator connect out, like
			// the sidecar, and nobody would listen.
			"--kv-events-config", fmt.Sprintf(`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:%d","replay_endpoint":"tcp://*:%d"}`, pub, replay)}
		if cfg.CacheBlocks > 0 {
			simArgs = append(simArgs, "--num-gpu-blocks-override", strconv.Itoa(cfg.CacheBlocks))
		}
		if cfg.ZeroLatency {
			simArgs = append(simArgs, "--zero-latency")
		}
		if cfg.SimLatency != nil {
			simArgs = append(simArgs, SimLatencyArgs(*cfg.SimLatency)...)
		}
		simArgs = append(simArgs, cfg.SimArgs...)
		sim, err := startProc(cfg.Binary, c.logDir, fmt.Sprintf("sim-%d", i), simArgs...)
		if err != nil {
			return err
		}
		c.add(0, sim)
		if err := waitOK(ctx, r.EngineURL+"/health", sim); err != nil {
			return fmt.Errorf("simulator %d not ready: %w", i, err)
		}
		scArgs := []string{"sidecar", "--engine-url", r.EngineURL, "--engine", "vllm", "--tokenizer", "builtin:sim",
			"--model", cfg.Model, "--block-size", strconv.Itoa(cfg.BlockSize),
			"--listen", fmt.Sprintf("127.0.0.1:%d", data), "--admin", fmt.Sprintf("127.0.0.1:%d", admin),
			"--gossip-bind", fmt.Sprintf("127.0.0.1:%d", gport), "--gossip-profile", "local", "--node-name", r.Name,
			"--kv-events-endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", pub),
			"--kv-events-replay-endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", replay),
			"--log-level", cfg.LogLevel}
		if seed != "" {
			scArgs = append(scArgs, "--join", seed)
		} else {
			seed = fmt.Sprintf("127.0.0.1:%d", gport)
		}
		if doc := sidecarYAML(cfg); doc != "" {
			path := filepath.Join(c.logDir, fmt.Sprintf("sidecar-%d.yaml", i))
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				return fmt.Errorf("write sidecar config: %w", err)
			}
			scArgs = append(scArgs, "--config", path)
		}
		sc, err := startProc(cfg.Binary, c.logDir, fmt.Sprintf("sidecar-%d", i), scArgs...)
		if err != nil {
			return err
		}
		c.add(1, sc)
		if err := waitOK(ctx, r.SidecarAdmin+"/healthz", sc); err != nil {
			return fmt.Errorf("sidecar %d not ready: %w", i, err)
		}
		c.Replicas = append(c.Replicas, r)
	}
	for i := range cfg.Balancers {
		port := 0
		if cfg.Port > 0 {
			port = cfg.Port + i
		} else {
			var err error
			if port, err = freePort(); err != nil {
				return err
			}
		}
		admin, err := freePort()
		if err != nil {
			return err
		}
		gport, err := freeUDPTCPPort()
		if err != nil {
			return err
		}
		b := Balancer{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Admin: fmt.Sprintf("http://127.0.0.1:%d", admin)}
		path := filepath.Join(c.logDir, fmt.Sprintf("balancer-%d.yaml", i))
		doc, err := balancerYAML(cfg, i, port, admin, gport, seed)
		if err != nil {
			return err
		}
		if cfg.ResponseCache && len(c.Replicas) > 0 {
			doc += responseCacheYAML(c.Replicas[0].EngineURL, cfg.Model)
		}
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			return fmt.Errorf("write balancer config: %w", err)
		}
		p, err := startProc(cfg.Binary, c.logDir, fmt.Sprintf("balancer-%d", i), "balancer", "--config", path, "--log-level", cfg.LogLevel)
		if err != nil {
			return err
		}
		c.add(2, p)
		if err := waitOK(ctx, b.Admin+"/healthz", p); err != nil {
			return fmt.Errorf("balancer %d not ready: %w", i, err)
		}
		c.Balancers = append(c.Balancers, b)
	}
	for i, b := range c.Balancers {
		if err := poll(ctx, func() error { return c.sees(b.Admin) }); err != nil {
			return fmt.Errorf("balancer %d does not see the fleet: %w", i, err)
		}
		// A sidecar advertises its data address once it has scraped its
		// engine: only then is it a replica the balancer routes to.
		if err := poll(ctx, func() error { return c.routesAll(b.Admin) }); err != nil {
			return fmt.Errorf("balancer %d does not route to every replica: %w", i, err)
		}
		// The balancer's routing table follows the gossip a poll interval
		// later; until it lists the model, requests get 503.
		if err := poll(ctx, func() error { return c.serves(b.URL) }); err != nil {
			return fmt.Errorf("balancer %d does not route %s: %w", i, cfg.Model, err)
		}
	}
	c.log.Info("dev fleet ready", "replicas", len(c.Replicas), "balancers", len(c.Balancers), "policy", cfg.Policy, "exact_state", cfg.ExactState, "logs", c.logDir)
	return nil
}

// balancerYAML is balancer i's config file.
func balancerYAML(cfg Config, i, port, admin, gport int, seed string) (string, error) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "listen: 127.0.0.1:%d\nadmin: 127.0.0.1:%d\n", port, admin)
	fmt.Fprintf(&sb, "models:\n  - name: %q\n", cfg.Model)
	if !cfg.NoTokenizer {
		sb.WriteString("    tokenizer: builtin:sim\n")
	}
	fmt.Fprintf(&sb, "    block_size: %d\n", cfg.BlockSize)
	if cfg.OverlayTTL != 0 || cfg.Routing != nil {
		rc := cfg.RouteConfig()
		if cfg.OverlayTTL != 0 {
			rc.Overlay.TTL = max(cfg.OverlayTTL, 0)
		}
		block, err := routingYAML(rc)
		if err != nil {
			return "", err
		}
		sb.WriteString(block)
	}
	fmt.Fprintf(&sb, "gossip:\n  enabled: true\n  bind: 127.0.0.1:%d\n  node_name: balancer-%d\n  profile: local\n  join: [%q]\n", gport, i, seed)
	if cfg.ExactState {
		sb.WriteString(balancerExactGossip())
	}
	fmt.Fprintf(&sb, "routing:\n  default_policy: %s\n  seed: %d\n", cfg.Policy, cfg.Seed)
	sb.WriteString(profilingYAML(cfg))
	return sb.String(), nil
}

// sidecarYAML is a sidecar's config file ("": none, flags only).
func sidecarYAML(cfg Config) string {
	doc := profilingYAML(cfg)
	if cfg.ExactState {
		doc = sidecarExactYAML() + doc
	}
	return doc
}

// profilingYAML is the observability section that serves /debug/pprof/ on
// a process's admin port, when the fleet is profiled ("" otherwise).
func profilingYAML(cfg Config) string {
	if !cfg.Profiling {
		return ""
	}
	return "observability:\n  profiling: true\n"
}

// responseCacheYAML is the response_cache section of a dev balancer: both
// caches in memory, embeddings from the simulator at embedURL (a loose
// bound: a loaded laptop must not turn a dev hit into a miss).
func responseCacheYAML(embedURL, model string) string {
	return fmt.Sprintf("response_cache:\n  exact: {enabled: true}\n  semantic:\n    enabled: true\n    max_distance: 0.1\n"+
		"    embeddings: {url: %q, model: %q, timeout: 1s}\n", embedURL, model)
}

// routesAll reports nil once the balancer's GET /v1/replicas lists every
// replica healthy.
func (c *Cluster) routesAll(admin string) error {
	resp, err := http.Get(admin + "/v1/replicas")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var reps []struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reps); err != nil {
		return fmt.Errorf("replicas: %w", err)
	}
	healthy := 0
	for _, r := range reps {
		if r.Health == "healthy" {
			healthy++
		}
	}
	if healthy < len(c.Replicas) {
		return fmt.Errorf("%d of %d replicas routable", healthy, len(c.Replicas))
	}
	return nil
}

// sees reports nil once the balancer's gossip state shows every replica
// alive with a fresh load report and a fresh summary (without one, routing
// falls back to prefix_hash placement).
func (c *Cluster) sees(admin string) error {
	resp, err := http.Get(admin + "/v1/gossip/state")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var st struct {
		Members []struct {
			Name   string `json:"name"`
			Role   string `json:"role"`
			Status string `json:"status"`
			Load   *struct {
				Stale bool `json:"stale"`
			} `json:"load"`
			Summary *struct {
				Stale bool `json:"stale"`
			} `json:"summary"`
		} `json:"members"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return fmt.Errorf("gossip state: %w", err)
	}
	ready := 0
	for _, m := range st.Members {
		if m.Role == "sidecar" && m.Status == "alive" && m.Load != nil && !m.Load.Stale && m.Summary != nil && !m.Summary.Stale {
			ready++
		}
	}
	if ready < len(c.Replicas) {
		return fmt.Errorf("%d of %d replicas alive with fresh load and summary", ready, len(c.Replicas))
	}
	return nil
}

// serves reports nil once the balancer's GET /v1/models lists the model.
func (c *Cluster) serves(url string) error {
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	for _, m := range list.Data {
		if m.ID == c.cfg.Model {
			return nil
		}
	}
	return fmt.Errorf("model %s not listed yet", c.cfg.Model)
}

func (c *Cluster) add(tier int, p *proc) {
	c.procs = append(c.procs, p)
	c.tiers[tier] = append(c.tiers[tier], p)
}

// Stop stops the children tier by tier, each tier in parallel: balancers
// first (no new requests), then sidecars (which leave the gossip), then
// simulators. It removes a temporary log directory and is safe to call more
// than once.
func (c *Cluster) Stop() error {
	var (
		mu   sync.Mutex
		errs []error
	)
	for tier := len(c.tiers) - 1; tier >= 0; tier-- {
		var wg sync.WaitGroup
		for _, p := range c.tiers[tier] {
			wg.Go(func() {
				if err := p.stop(c.cfg.StopTimeout); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	if c.tmpLogDir && !c.cfg.KeepLogs && len(errs) == 0 {
		_ = os.RemoveAll(c.logDir)
	}
	return errors.Join(errs...)
}

// Run starts the fleet, calls ready with it, and stops it when ctx ends or
// a child exits on its own (then it returns that error).
func Run(ctx context.Context, cfg Config, log *slog.Logger, ready func(*Cluster)) error {
	c, err := Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(c)
	}
	died := make(chan error, 1)
	for _, p := range c.procs {
		go func() {
			select {
			case <-p.done:
				select {
				case died <- p.exited():
				default:
				}
			case <-ctx.Done():
			}
		}()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-died:
	}
	if err := c.Stop(); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}
