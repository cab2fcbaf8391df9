package webui

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"time"
)

//go:embed static
var static embed.FS

// Info is what the page learns about the node it is served by
// (GET /ui/info).
type Info struct {
	// Role is balancer or sidecar: the page shows the decisions and the
	// explain form on a balancer only.
	Role string `json:"role"`
	// Name is the node's name (its gossip node name).
	Name string `json:"name"`
	// Version is the build's version.
	Version string `json:"version"`
	// Gossip reports whether the node serves /v1/gossip/members and
	// /v1/gossip/state.
	Gossip bool `json:"gossip"`
}

// UI serves the page and its node-local data.
type UI struct {
	info   Info
	series *Series
}

// Series defaults: one point a second, ten minutes of them.
const (
	SeriesStep = time.Second
	SeriesSize = 600
)

// New returns the UI of a node described by info, whose history comes from
// read (see Totals). Run must run for the history to fill.
func New(info Info, read func() Totals) *UI {
	return &UI{info: info, series: NewSeries(read, SeriesStep, SeriesSize)}
}

// Run keeps the history until ctx ends.
func (u *UI) Run(ctx context.Context) error {
	return u.series.Run(ctx)
}

// SeriesResponse is the body of GET /debug/series.
type SeriesResponse struct {
	StepSeconds float64 `json:"step_seconds"`
	Points      []Point `json:"points"`
}

// Mount adds to mux: GET / (a redirect to /ui/), GET /ui/ (the page and its
// assets), GET /ui/info and GET /debug/series.
func (u *UI) Mount(mux *http.ServeMux) {
	sub, _ := fs.Sub(static, "static")
	files := http.StripPrefix("/ui/", http.FileServerFS(sub))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	mux.HandleFunc("GET /ui/info", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, u.info)
	})
	mux.Handle("GET /ui/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /debug/series", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, SeriesResponse{StepSeconds: u.series.step.Seconds(), Points: u.series.Points()})
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
