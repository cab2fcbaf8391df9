package balancer

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/inferrail/inferrail/docs"
	"github.com/inferrail/inferrail/internal/openai"
	"github.com/inferrail/inferrail/internal/profiling"
)

// adminRoutes adds the admin port's gateway endpoints to mux.
func (b *Balancer) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /admin/reload", b.serveReload)
	mux.HandleFunc("GET /v1/replicas", b.serveReplicas)
	mux.HandleFunc("GET /v1/config", b.serveConfig)
	mux.HandleFunc("GET /docs", b.serveDocs)
	mux.HandleFunc("GET /docs/{file...}", b.serveDocs)
	mux.HandleFunc("GET /debug/decisions", b.serveDecisions)
	mux.HandleFunc("POST /v1/explain", b.serveExplain)
	mux.HandleFunc("POST /admin/cache/purge", b.servePurge)
	if b.cfg.Observability.Profiling {
		profiling.Mount(mux, b.adminAllowed) // the gate of the config running at each request
	}
}

// adminAllowed reports whether r may call an admin endpoint that changes
// or costs the process something (gateway.Gate.AdminAllowed), and answers
// 403 when not.
func (b *Balancer) adminAllowed(w http.ResponseWriter, r *http.Request) bool {
	if b.cur().gate.AdminAllowed(r) {
		return true
	}
	(&openai.Error{Status: http.StatusForbidden, Type: openai.TypePermissionDenied,
		Message: "the admin endpoints need the admin token (auth.admin_token) once API keys are on"}).Write(w)
	return false
}

// serveReload re-reads the config file (POST /admin/reload): 200 with the
// ReloadResult, or 400 with every problem (the running config stays). With
// keys on it needs the admin token (403 without).
func (b *Balancer) serveReload(w http.ResponseWriter, r *http.Request) {
	if !b.adminAllowed(w, r) {
		return
	}
	res, err := b.ReloadFromSource()
	if err != nil {
		openai.BadRequest("", "%v", err).Write(w)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// ReplicaInfo is one replica as GET /v1/replicas shows it.
type ReplicaInfo struct {
	Name   string   `json:"name"`
	URL    string   `json:"url"` // credentials redacted
	Static bool     `json:"static"`
	Models []string `json:"models"`
	Weight float64  `json:"weight"`
	// BlockSize is its KV block size in tokens and KVCapacityBlocks its KV
	// capacity in blocks, as its sidecar advertises them or the config sets
	// them (absent: unknown).
	BlockSize        int `json:"block_size,omitempty"`
	KVCapacityBlocks int `json:"kv_capacity_blocks,omitempty"`
	// Health is healthy, ejected, unhealthy, gone or draining.
	Health string `json:"health"`
	// InFlight and Pending are this balancer's own requests there.
	InFlight int64 `json:"in_flight"`
	Pending  int64 `json:"pending"`
	// Load is the last gossiped load report (sidecar replicas).
	Load *ReplicaLoad `json:"load,omitempty"`
	// SummaryAgeSeconds is the age of its prefix summary (absent: none).
	SummaryAgeSeconds *float64 `json:"summary_age_seconds,omitempty"`
	// Group is the DNS discovery group that found it (absent: config or
	// gossip).
	Group string `json:"group,omitempty"`
}

// ReplicaLoad is a replica's gossiped load.
type ReplicaLoad struct {
	Running  int64   `json:"running"`
	Waiting  int64   `json:"waiting"`
	InFlight int64   `json:"in_flight"`
	KVUsage  float64 `json:"kv_cache_usage"`
	// HeldBlocks is the KV blocks the engine holds, cached contexts
	// included (load.Report.HeldBlocks; -1 unknown).
	HeldBlocks int64   `json:"blocks_held"`
	AgeSeconds float64 `json:"age_seconds"`
	Fresh      bool    `json:"fresh"`
}

// serveReplicas lists the replicas (GET /v1/replicas).
func (b *Balancer) serveReplicas(w http.ResponseWriter, r *http.Request) {
	now := b.now()
	out := []ReplicaInfo{}
	for _, rep := range b.fleet.Snapshot().Replicas {
		ri := ReplicaInfo{Name: rep.ID, URL: redactURL(rep.URL), Static: rep.Static, Group: rep.Group, Models: rep.Models,
			Weight: rep.Weight, BlockSize: rep.BlockSize, KVCapacityBlocks: rep.CapacityBlocks, Health: string(rep.State(now)),
			InFlight: rep.Counters.InFlight.Load(), Pending: rep.Counters.Pending.Load()}
		if ri.Weight == 0 {
			ri.Weight = 1
		}
		if m := rep.Member(); m != nil {
			if lr, fresh, ok := m.Load(now); ok {
				ri.Load = &ReplicaLoad{Running: lr.Load.Running, Waiting: lr.Load.Waiting,
					InFlight: lr.Load.InFlight, KVUsage: lr.Load.KVUsage, HeldBlocks: lr.Load.HeldBlocks,
					AgeSeconds: now.Sub(lr.ReceivedAt).Seconds(), Fresh: fresh}
			}
			if at := m.SummaryConfirmedAt(); !at.IsZero() {
				age := now.Sub(at).Seconds()
				ri.SummaryAgeSeconds = &age
			}
		}
		out = append(out, ri)
	}
	writeJSON(w, http.StatusOK, out)
}

// redactURL returns u without its user info's password and query values.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		c.User = url.UserPassword("redacted", "redacted")
	}
	if c.RawQuery != "" {
		c.RawQuery = "redacted"
	}
	return c.String()
}

// RedactedConfig returns the active config with every secret replaced:
// API keys and their digests, the admin token, the Redis password, replica
// api_keys and URL credentials, the response cache's embeddings api_key,
// URL credentials and Redis password.
func (b *Balancer) RedactedConfig() Config {
	c := *b.cur().cfg
	c.Gateway = c.Gateway.Redacted()
	reps := make([]ReplicaConfig, len(c.Replicas))
	for i, r := range c.Replicas {
		if r.APIKey != "" {
			r.APIKey = "<redacted>"
		}
		if u, err := url.Parse(r.URL); err == nil {
			r.URL = redactURL(u)
		}
		reps[i] = r
	}
	c.Replicas = reps
	c.ResponseCache = c.ResponseCache.Redacted()
	return c
}

// serveConfig writes the active config, secrets redacted (GET /v1/config):
// JSON with the YAML key names, or YAML with ?format=yaml.
func (b *Balancer) serveConfig(w http.ResponseWriter, r *http.Request) {
	y, err := yaml.Marshal(b.RedactedConfig())
	if err != nil {
		openai.Internal("encode config: %v", err).Write(w)
		return
	}
	if r.URL.Query().Get("format") == "yaml" {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(y)
		return
	}
	var v any
	if err := yaml.Unmarshal(y, &v); err != nil {
		openai.Internal("encode config: %v", err).Write(w)
		return
	}
	b2, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		openai.Internal("encode config: %v", err).Write(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b2)
}

// serveDocs serves the docs embedded in the binary: GET /docs is an index,
// GET /docs/NAME.md a page as text/markdown.
func (b *Balancer) serveDocs(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.PathValue("file"), "/")
	if name == "" {
		var names []string
		_ = fs.WalkDir(docs.FS, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
				names = append(names, p)
			}
			return nil
		})
		sort.Strings(names)
		var sb strings.Builder
		sb.WriteString("<!doctype html><meta charset=utf-8><title>inferrail docs</title><h1>inferrail docs</h1><ul>\n")
		for _, n := range names {
			fmt.Fprintf(&sb, "<li><a href=\"/docs/%s\">%s</a></li>\n", html.EscapeString(n), html.EscapeString(n))
		}
		sb.WriteString("</ul>\n")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(sb.String()))
		return
	}
	if path.Clean(name) != name || !fs.ValidPath(name) {
		openai.RouteNotFound().Write(w)
		return
	}
	data, err := fs.ReadFile(docs.FS, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		openai.RouteNotFound().Write(w)
		return
	case err != nil:
		openai.Internal("read %s: %v", name, err).Write(w)
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	_, _ = w.Write(data)
}
