package sidecar

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"

	"github.com/inferrail/inferrail/internal/buildinfo"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/profiling"
	"github.com/inferrail/inferrail/internal/webui"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// adminDeps are what the admin server reads.
type adminDeps struct {
	gatherer prometheus.Gatherer
	// gossip serves /v1/gossip/members and /v1/gossip/state; nil answers 503.
	gossip http.Handler
	// summary describes the current summary.
	summary func() SummaryInfo
	// load returns the current load report.
	load func() LoadStatus
	// healthy reports whether the sidecar is serving (nil error) and why
	// not otherwise.
	healthy func() error
	// blocks returns the active block set (source, hashes per medium), for
	// tests and debugging.
	blocks func() (string, map[string][]kvblock.Hash)
	// ui serves the web UI (/ui/, /debug/series); nil: none.
	ui *webui.UI
	// profiling serves /debug/pprof/ (observability.profiling).
	profiling bool
}

// BlocksDump is the body of GET /debug/blocks: the router block hashes of
// the block set that feeds the summary, sorted, per medium.
type BlocksDump struct {
	Source string                    `json:"source"`
	Blocks map[string][]kvblock.Hash `json:"blocks"`
}

// newAdminHandler returns the admin mux.
func newAdminHandler(d adminDeps) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := d.healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	gossip := d.gossip
	if gossip == nil {
		gossip = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "gossip not running", http.StatusServiceUnavailable)
		})
	}
	mux.Handle("/v1/gossip/", gossip)
	mux.HandleFunc("GET /v1/summary", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, d.summary())
	})
	mux.HandleFunc("GET /v1/load", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, d.load())
	})
	if d.ui != nil {
		d.ui.Mount(mux)
	}
	if d.profiling {
		profiling.Mount(mux, nil)
	}
	mux.HandleFunc("GET /debug/blocks", func(w http.ResponseWriter, r *http.Request) {
		source, sets := d.blocks()
		for _, hs := range sets {
			slices.Sort(hs)
		}
		writeJSON(w, BlocksDump{Source: source, Blocks: sets})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// newUI returns the sidecar's web UI: its history is the engine's prefix
// cache hits and queries (as the engine reports them on its metrics page)
// and the requests the data path proxied.
func (s *Sidecar) newUI() *webui.UI {
	name := s.cfg.Gossip.NodeName
	if name == "" {
		name, _ = os.Hostname()
	}
	proxied := webui.GathererTotals(s.reg, "inferrail_sidecar_proxy_requests_total", "", "", "")
	return webui.New(webui.Info{Role: "sidecar", Name: name, Version: buildinfo.Version(), Gossip: s.gossip != nil},
		func() webui.Totals {
			t := proxied()
			l := s.Load().Engine
			t.PromptTokens, t.CachedTokens = l.PrefixQueries, l.PrefixHits
			return t
		})
}
