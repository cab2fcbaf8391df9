package balancer

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/gateway"
)

// live is the reloadable part of the balancer, swapped whole by Reload: the
// request path loads it once per use and never sees half a config.
type live struct {
	// cfg is the active config. Its reloadable sections (models, replicas,
	// routing, auth, rate_limits, cors) come from the last good file; the
	// others are the ones the process started with.
	cfg    *Config
	models *models
	gate   *gateway.Gate
	// lim is the gate's limiter (kept across reloads while
	// rate_limits.redis is unchanged).
	lim *gateway.Limiter
}

// cur returns the active live state.
func (b *Balancer) cur() *live { return b.live.Load() }

// buildLive builds the live state of cfg, reusing what prev (nil at start)
// has for unchanged parts: the models whose config is equal (their policy
// state and tokenizer) and the limiter while rate_limits.redis is equal.
func (b *Balancer) buildLive(cfg *Config, prev *live) (*live, error) {
	var oldModels *models
	if prev != nil {
		oldModels = prev.models
	}
	ms, err := newModelsReusing(cfg, b.reg, oldModels, b.seedMix)
	if err != nil {
		return nil, err
	}
	ms.onForget = b.m.forgetModel
	ms.onPolicy = b.sharePolicy
	b.shareModels(ms)
	l := &live{cfg: cfg, models: ms}
	redis := cfg.Gateway.RateLimits.Redis
	if prev != nil && reflect.DeepEqual(prev.cfg.Gateway.RateLimits.Redis, redis) {
		l.lim = prev.lim
	} else {
		lc := gateway.LimiterConfig{FailClosed: redis.FailClosed, RetryInterval: redis.RetryInterval, Timeout: redis.Timeout}
		if redis.Addr != "" {
			lc.Shared = gateway.NewRedisStore(redis)
		}
		l.lim = gateway.NewLimiter(lc, b.log.With("component", "ratelimit"), b.gm)
	}
	resolve := func(name string) string {
		if m := ms.byKey[name]; m != nil {
			return m.cfg.Name
		}
		return name
	}
	if l.gate, err = gateway.New(cfg.Gateway, resolve, l.lim, b.gm); err != nil {
		if l.lim != nil && (prev == nil || l.lim != prev.lim) {
			_ = l.lim.Close()
		}
		return nil, err
	}
	return l, nil
}

// staticSpecs returns the fleet specs of cfg's static replicas.
func staticSpecs(cfg *Config) []fleet.Spec {
	var out []fleet.Spec
	for _, r := range cfg.Replicas {
		u, _ := url.Parse(r.URL) // validated
		out = append(out, fleet.Spec{
			ID: r.Name, URL: u, H2C: r.H2C, Static: true, Models: r.Models, BlockSize: r.BlockSize,
			MaxConcurrency: r.MaxConcurrency, MaxPending: r.MaxPending, CapacityBlocks: r.KVCapacityBlocks, Weight: r.Weight,
			APIKey: r.APIKey, PathPrefix: r.PathPrefix, ProbePath: r.ProbePath, Draining: r.Drain,
		})
	}
	return out
}

// restartOnly lists the sections a reload does not apply, with how to read
// them from a config.
var restartOnly = []struct {
	path string
	get  func(*Config) any
}{
	{"listen", func(c *Config) any { return c.Listen }},
	{"admin", func(c *Config) any { return c.Admin }},
	{"max_body_bytes", func(c *Config) any { return c.MaxBodyBytes }},
	{"shutdown_timeout", func(c *Config) any { return c.ShutdownTimeout }},
	{"replica_defaults", func(c *Config) any { return c.ReplicaDefaults }},
	{"discovery", func(c *Config) any { return c.Discovery }},
	{"gossip", func(c *Config) any { return c.Gossip }},
	{"health", func(c *Config) any { return c.Health }},
	{"retry", func(c *Config) any { return c.Retry }},
	{"timeouts", func(c *Config) any { return c.Timeouts }},
	{"tokenize", func(c *Config) any { return c.Tokenize }},
	{"response_cache", func(c *Config) any { return c.ResponseCache }},
}

// ReloadResult says what a reload did.
type ReloadResult struct {
	// Restart lists the changed sections that take effect only on restart
	// (the running values stay).
	Restart []string `json:"needs_restart,omitempty"`
	// Models and Replicas count the active ones.
	Models   int `json:"models"`
	Replicas int `json:"static_replicas"`
	Keys     int `json:"keys"`
}

// ErrReload wraps every reason a reload was refused; the old config stays.
var ErrReload = errors.New("config not reloaded; the running config stays")

// Reload applies next: it validates next fully (every problem with its
// path), loads its tokenizers and keys file, and only then swaps models,
// aliases, policies and routing parameters, static replicas, keys, limits
// and CORS at once. Requests in flight finish on the config they started
// with; a removed or changed replica is drained (requests waiting for its
// first byte move on). Sections listed in ReloadResult.Restart keep their
// running values. Reloads are serialized.
func (b *Balancer) Reload(next Config) (ReloadResult, error) {
	b.reloadMu.Lock()
	defer b.reloadMu.Unlock()
	res, err := b.reload(next)
	if err != nil {
		b.reloads.WithLabelValues("error").Inc()
		b.log.Error("config reload failed; the running config stays", "err", err)
		return res, fmt.Errorf("%w:\n%w", ErrReload, err)
	}
	b.reloads.WithLabelValues("ok").Inc()
	b.lastReload.Set(float64(b.now().UnixNano()) / float64(time.Second))
	b.log.Info("config reloaded", "models", res.Models, "static_replicas", res.Replicas, "keys", res.Keys, "needs_restart", res.Restart)
	return res, nil
}

func (b *Balancer) reload(next Config) (ReloadResult, error) {
	var res ReloadResult
	if err := next.Validate(); err != nil {
		return res, err
	}
	if err := next.Preflight(); err != nil {
		return res, err
	}
	prev := b.cur()
	merged := *prev.cfg
	merged.Models, merged.Replicas, merged.Routing, merged.Gateway = next.Models, next.Replicas, next.Routing, next.Gateway
	for _, f := range restartOnly {
		if !reflect.DeepEqual(f.get(prev.cfg), f.get(&next)) {
			res.Restart = append(res.Restart, f.path)
		}
	}
	if err := merged.Validate(); err != nil { // e.g. no replicas left with gossip off
		return res, err
	}
	l, err := b.buildLive(&merged, prev)
	if err != nil {
		return res, err
	}
	if err := b.fleet.SetStatic(staticSpecs(&merged)); err != nil {
		return res, err
	}
	b.live.Store(l)
	if l.lim != prev.lim {
		_ = prev.lim.Close()
	}
	res.Models, res.Replicas = len(merged.Models), len(merged.Replicas)
	if l.gate.KeysOn() {
		res.Keys = l.gate.Keys()
	}
	return res, nil
}

// ReloadSource reads the config a reload applies: the file and flags the
// process started with.
type ReloadSource func() (Config, error)

// SetReloadSource sets where ReloadFromSource (SIGHUP, POST /admin/reload)
// reads the config; without one those reloads are refused.
func (b *Balancer) SetReloadSource(src ReloadSource) {
	b.reloadMu.Lock()
	defer b.reloadMu.Unlock()
	b.source = src
}

// ReloadFromSource reads the config from the reload source and applies it
// (Reload). A file that does not decode is refused with every problem.
func (b *Balancer) ReloadFromSource() (ReloadResult, error) {
	b.reloadMu.Lock()
	src := b.source
	b.reloadMu.Unlock()
	if src == nil {
		return ReloadResult{}, fmt.Errorf("%w: no config file to reload from", ErrReload)
	}
	next, err := src()
	if err != nil {
		if verr := next.Validate(); verr != nil {
			err = errors.Join(err, verr)
		}
		b.reloads.WithLabelValues("error").Inc()
		b.log.Error("config reload failed; the running config stays", "err", err)
		return ReloadResult{}, fmt.Errorf("%w:\n%w", ErrReload, err)
	}
	return b.Reload(next)
}

// swapRegisterer registers collectors, replacing an equal one already
// registered: a reloaded model's tokenizer metrics take over from the old
// tokenizer's.
type swapRegisterer struct{ prometheus.Registerer }

func (s swapRegisterer) Register(c prometheus.Collector) error {
	err := s.Registerer.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		s.Registerer.Unregister(are.ExistingCollector)
		return s.Registerer.Register(c)
	}
	return err
}

func (s swapRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := s.Register(c); err != nil {
			panic(err)
		}
	}
}
