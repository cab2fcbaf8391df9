package calibrate

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// An engine that accepts requests but never answers, or stops a stream
// half-way, makes Run fail with an error, bounded by the request timeout,
// instead of hanging.
func TestCalibrateDoesNotHang(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"data":[{"id":"m","max_model_len":4096}]}`))
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		// The server notices a closed connection once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select { // never answers
		case <-r.Context().Done():
		case <-release:
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
			return
		}
		if r.URL.Path == "/tokenize" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"text\":\"a\"}]}\n\n"))
		w.(http.Flusher).Flush()
		select { // the stream stops here
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer stalled.Close()
	defer close(release) // before the servers close: they wait for their handlers

	for _, tt := range []struct {
		name, url, key, want string
	}{
		{"bad key", srv.URL, "x", "status 401: bad key"},
		{"silent tokenize", srv.URL, "k", "context deadline exceeded"},
		{"stalled stream", stalled.URL, "", "context deadline exceeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Engine, cfg.APIKey = tt.url, tt.key
			cfg.RequestTimeout = 100 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
			defer cancel()
			_, err := Run(ctx, cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run() = %v, want an error with %q", err, tt.want)
			}
			if ctx.Err() != nil {
				t.Error("Run ran into the hang guard")
			}
		})
	}
}
